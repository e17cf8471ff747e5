import type { FileOptions } from './sandbox.js';

/** Base64 payload of a {@link DataBlock}. */
export interface Base64Source {
  /** The source's kind. */
  readonly type: 'base64';
  /** The payload, base64-encoded. */
  readonly data: string;
  /** Its media type (`image/png`). */
  readonly media_type: string;
}

/** URL payload of a {@link DataBlock}; offloaded data uses `workspace:///data/<name>`. */
export interface UrlSource {
  /** The source's kind. */
  readonly type: 'url';
  /** Where the payload is: `workspace:///data/<sha256><ext>` once offloaded (see `resolveWorkspaceUrl`). */
  readonly url: string;
  /** Its media type (`image/png`). */
  readonly media_type: string;
}

/** A media block in AgentScope's message format (the shape `offloadData` takes and returns). */
export interface DataBlock {
  /** The block's kind. */
  readonly type: 'data';
  /** The block's id, kept as it is. */
  readonly id?: string;
  /** A display name (a file name), kept as it is. */
  readonly name?: string | null;
  /** The payload: inline base64, or a URL. */
  readonly source: Base64Source | UrlSource;
  readonly [key: string]: unknown;
}

/** Text block in AgentScope's message format. */
export interface TextBlock {
  /** The block's kind. */
  readonly type: 'text';
  /** The text. */
  readonly text: string;
  readonly [key: string]: unknown;
}

/** A tool result to offload: its id names the file; its output is text or blocks. */
export interface OffloadableToolResult {
  /** The tool call's id; it names the file (`tool_result-<id>.txt`) and is checked like every id. */
  readonly id: string;
  /** The result: text, or blocks whose media is stored under `data/` and shown as placeholders. */
  readonly output:
    | string
    | readonly (
        | TextBlock
        | DataBlock
        | {
            /**
             * The kind of a block of another format (`image`, `input_image`); its media is stored when
             * recognised, else it is left out.
             */
            readonly type: string;
            readonly [key: string]: unknown;
          }
      )[];
  readonly [key: string]: unknown;
}

/**
 * Durable storage for what does not fit in an agent's context: compressed history, over-size tool
 * results and media payloads. Every workspace is an `Offloader`.
 */
export interface Offloader {
  /**
   * Stores a base64 block's bytes once under `data/<sha256><ext>` and returns a copy of the block
   * whose source is `workspace:///data/<name>`. A URL-sourced block is returned unchanged.
   */
  offloadData(block: DataBlock, options?: FileOptions): Promise<DataBlock>;
  /**
   * Appends one JSON line per message to `sessions/<sessionId>/context.jsonl` (base64 media is
   * offloaded to `data/` first) and returns that file's path inside the sandbox.
   */
  offloadContext(sessionId: string, messages: readonly unknown[], options?: FileOptions): Promise<string>;
  /**
   * Writes a tool result to `sessions/<sessionId>/tool_result-<id>.txt` (media replaced by
   * `<data …/>` placeholders) and returns that file's path inside the sandbox.
   */
  offloadToolResult(sessionId: string, result: OffloadableToolResult, options?: FileOptions): Promise<string>;
}
