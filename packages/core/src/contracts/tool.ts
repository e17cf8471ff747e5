/** A JSON Schema object, as tools publish their input schema. */
export type JsonSchema = { readonly [key: string]: unknown };

/** Text content of a tool result (MCP `TextContent`). */
export interface TextContent {
  /** The content's kind. */
  readonly type: 'text';
  /** The text. */
  readonly text: string;
}

/** Image content of a tool result (MCP `ImageContent`): base64 data and its media type. */
export interface ImageContent {
  /** The content's kind. */
  readonly type: 'image';
  /** The image, base64-encoded. */
  readonly data: string;
  /** Its media type (`image/png`). */
  readonly mimeType: string;
}

/** Audio content of a tool result (MCP `AudioContent`). */
export interface AudioContent {
  /** The content's kind. */
  readonly type: 'audio';
  /** The audio, base64-encoded. */
  readonly data: string;
  /** Its media type (`audio/wav`). */
  readonly mimeType: string;
}

/** A link to a resource (MCP `ResourceLink`), used for files a tool wrote or offloaded. */
export interface ResourceLinkContent {
  /** The content's kind. */
  readonly type: 'resource_link';
  /** Where the resource is (`workspace:///…` for a file of the workspace). */
  readonly uri: string;
  /** Its display name. */
  readonly name: string;
  /** Its media type, when known. */
  readonly mimeType?: string;
  /** What it is, for the model. */
  readonly description?: string;
}

/** A document embedded in a result (MCP `EmbeddedResource` with a base64 `blob`), such as a PDF. */
export interface EmbeddedResourceContent {
  /** The content's kind. */
  readonly type: 'resource';
  /** The document: where it came from, its media type and its bytes, base64-encoded. */
  readonly resource: {
    /** Where the document came from. */
    readonly uri: string;
    /** Its media type (`application/pdf`). */
    readonly mimeType: string;
    /** Its bytes, base64-encoded. */
    readonly blob: string;
  };
}

/** One item of a tool result's content, in MCP's shapes. */
export type ToolContent =
  | TextContent
  | ImageContent
  | AudioContent
  | ResourceLinkContent
  | EmbeddedResourceContent;

/**
 * What a tool call returns: MCP-shaped content, an error flag, and structured metadata
 * (Edit and Write put a unified `diff` and the `occurrences` count there).
 */
export interface ToolResult {
  /** What the model sees. */
  readonly content: readonly ToolContent[];
  /** True when the call failed; `content` then says why. */
  readonly isError: boolean;
  /** Facts for programs rather than the model (a `diff`, a `count`, an MCP `structuredContent`). */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** Hints about a tool, in MCP's annotation vocabulary plus @ws's concurrency flag. */
export interface ToolAnnotations {
  /** The tool does not change its environment. */
  readonly readOnlyHint: boolean;
  /** Several calls of this tool may run at once. */
  readonly concurrencySafe: boolean;
  /** The tool may destroy data (only meaningful when not read-only). */
  readonly destructiveHint?: boolean;
  /** Calling it twice with the same input has no extra effect. */
  readonly idempotentHint?: boolean;
  /** The tool reaches outside the workspace (the network, external services). */
  readonly openWorldHint?: boolean;
  /** A human-readable title. */
  readonly title?: string;
}

/** Options of {@link Tool.call}. */
export interface ToolCallOptions {
  /** Aborting stops the call and the work it started (a command's process group is killed). */
  signal?: AbortSignal;
  /**
   * The model's id for this call, when the agent framework has one: reported in the workspace's
   * `tool.*` events and as the span attribute `gen_ai.tool.call.id`.
   */
  toolCallId?: string;
}

/**
 * A tool an agent can call: the workspace's built-ins (`Bash`, `Read`, …) and MCP tools
 * (`mcp__<server>__<tool>`) share this shape, which maps one-to-one onto an MCP tool and onto the
 * tool shapes of the common TypeScript agent SDKs.
 */
export interface Tool<Input = Record<string, unknown>> {
  /** The name the model calls it by (`Bash`, `mcp__<server>__<tool>`). */
  readonly name: string;
  /** What it does and how to use it, for the model. */
  readonly description: string;
  /** The JSON Schema of its input (an object). */
  readonly inputSchema: JsonSchema;
  /** Hints about its behaviour (read-only, destructive, safe to run concurrently). */
  readonly annotations: ToolAnnotations;
  /**
   * Runs the tool. Failures the model should see (a bad argument, a missing file, a failed command)
   * come back as a result with `isError: true`; only misuse of the API itself (a disposed
   * workspace, an aborted signal) throws.
   */
  call(input: Input, options?: ToolCallOptions): Promise<ToolResult>;
}
