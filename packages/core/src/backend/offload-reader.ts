import { isWsError, throwIfAborted, WsError } from '../contracts/errors.js';
import type { FileOptions } from '../contracts/sandbox.js';
import type { Workspace } from '../contracts/workspace.js';
import { resolveWorkspaceUrl } from '../internal/offload/offloader.js';

/** A session's offloaded context as read back by {@link readOffloadedContext}. */
export interface OffloadedContext {
  /** The `context.jsonl` file, inside the sandbox. */
  readonly path: string;
  /** One parsed JSON value per line, in the order they were offloaded. */
  readonly messages: unknown[];
  /**
   * The bytes of an offloaded payload (`workspace:///data/…`), each URL read once.
   * @throws WsError `NOT_FOUND` when the payload is gone, `INVALID_ARGUMENT` for a URL outside the workdir.
   */
  readData(url: string): Promise<Uint8Array>;
}

/**
 * Reads back what `offloadContext` stored for a session: the lines of its `context.jsonl`, parsed,
 * and a reader for the media payloads they refer to. Framework adapters turn these back into their
 * own messages. A session with nothing offloaded reads as no messages.
 * @throws WsError `INVALID_ARGUMENT` for a bad session id or a line that is not JSON (with its number),
 *   `ABORTED` when the signal fires.
 */
export async function readOffloadedContext(
  workspace: Workspace,
  sessionId: string,
  options: FileOptions = {},
): Promise<OffloadedContext> {
  throwIfAborted(options.signal);
  // An empty batch appends nothing: it checks the id and names the session's file.
  const path = await workspace.offloadContext(sessionId, [], options);
  const sandbox = workspace.getSandbox();
  const payloads = new Map<string, Promise<Uint8Array>>();
  const readData = (url: string): Promise<Uint8Array> => {
    let payload = payloads.get(url);
    if (!payload) {
      try {
        payload = sandbox.readFile(resolveWorkspaceUrl(url, workspace.workdir), options);
      } catch (error) {
        payload = Promise.reject(error);
      }
      payloads.set(url, payload);
    }
    return payload;
  };
  let text: string;
  try {
    text = new TextDecoder().decode(await sandbox.readFile(path, options));
  } catch (error) {
    if (isWsError(error, 'NOT_FOUND')) return { path, messages: [], readData };
    throw error;
  }
  const messages: unknown[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    try {
      messages.push(JSON.parse(line));
    } catch (error) {
      throw new WsError('INVALID_ARGUMENT', `Line ${index + 1} of ${path} is not JSON`, {
        cause: error,
        details: { path, line: index + 1 },
      });
    }
  }
  return { path, messages, readData };
}
