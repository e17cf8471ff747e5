import { type FileOptions, type Workspace, WsError } from '@ws/core';
import { readOffloadedContext } from '@ws/core/backend';
import type { ModelMessage } from 'ai';

const WORKSPACE_URL = 'workspace:///';
// Tool-output parts (`ToolResultOutput` content) that carry base64 in `data`.
const OUTPUT_MEDIA = new Set(['image-data', 'file-data', 'media']);

type Node = Record<string, unknown>;

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isWorkspaceUrl = (value: unknown): value is string =>
  typeof value === 'string' && value.startsWith(WORKSPACE_URL);

/**
 * Appends AI SDK messages (`ModelMessage[]`, as `result.response.messages` gives them) to
 * `sessions/<sessionId>/context.jsonl` through `workspace.offloadContext`, one JSON line per message.
 * Media leaves the lines for `data/<sha256><ext>`: image and file parts (bytes as `Uint8Array`,
 * `ArrayBuffer`, base64 or a data URL) and the images and files of tool results (`image-data`,
 * `file-data`), each replaced by its `workspace:///data/…` URL. `URL` objects are kept as their
 * text. {@link loadModelMessages} reads the messages back with the bytes restored.
 * @returns The path of `context.jsonl` inside the sandbox.
 * @throws WsError `INVALID_ARGUMENT` for a bad session id or a message that is not JSON-able once
 *   its bytes are encoded (a cycle, a BigInt), `ABORTED` when the signal fires.
 */
export async function offloadModelMessages(
  workspace: Workspace,
  sessionId: string,
  messages: readonly ModelMessage[],
  options: FileOptions = {},
): Promise<string> {
  if (!Array.isArray(messages)) throw new WsError('INVALID_ARGUMENT', 'messages must be an array');
  const prepared: unknown[] = [];
  for (const message of messages) prepared.push(await prepare(workspace, message, options));
  return workspace.offloadContext(sessionId, prepared, options);
}

/**
 * Reads back what {@link offloadModelMessages} (or `offloadContext`) stored for a session, as AI SDK
 * messages ready for the next `generateText`: every `workspace:///data/…` reference of an image,
 * file or tool-result part is read from the workspace (parts as a `Uint8Array`, tool-result parts as
 * base64, the types each part takes). A session with nothing offloaded reads as `[]`.
 * @throws WsError `NOT_FOUND` when a referenced payload is gone, `INVALID_ARGUMENT` for a line that
 *   is not JSON, `ABORTED` when the signal fires.
 */
export async function loadModelMessages(
  workspace: Workspace,
  sessionId: string,
  options: FileOptions = {},
): Promise<ModelMessage[]> {
  const context = await readOffloadedContext(workspace, sessionId, options);
  const messages: ModelMessage[] = [];
  for (const parsed of context.messages)
    messages.push((await restore(parsed, context.readData)) as ModelMessage);
  return messages;
}

/** The message with its bytes as base64 and the media of tool outputs stored, ready for JSON. */
async function prepare(workspace: Workspace, value: unknown, options: FileOptions): Promise<unknown> {
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return toBase64(value);
  if (value instanceof URL) return value.href;
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) items.push(await prepare(workspace, item, options));
    return items;
  }
  if (!isNode(value)) return value;
  if (value.type === 'image' && isBytes(value.image) && typeof value.mediaType !== 'string') {
    // Offloading needs the type to name the file; the SDK would sniff it the same way.
    const mediaType = sniffImageType(toBytes(value.image));
    if (mediaType) value = { ...value, mediaType };
  }
  const node = value as Node;
  if (
    typeof node.type === 'string' &&
    OUTPUT_MEDIA.has(node.type) &&
    typeof node.data === 'string' &&
    !isWorkspaceUrl(node.data) &&
    typeof node.mediaType === 'string'
  ) {
    // `offloadContext` does not know these tool-output shapes: their bytes are stored here, once.
    const stored = await workspace.offloadData(
      { type: 'data', source: { type: 'base64', data: node.data, media_type: node.mediaType } },
      options,
    );
    if (stored.source.type === 'url') return { ...node, data: stored.source.url };
  }
  const output: Node = {};
  for (const [key, item] of Object.entries(node)) {
    if (item !== undefined) output[key] = await prepare(workspace, item, options);
  }
  return output;
}

/** The offloaded message with each `workspace:///` payload of a media part read back. */
async function restore(value: unknown, read: (url: string) => Promise<Uint8Array>): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((item) => restore(item, read)));
  if (!isNode(value)) return value;
  if (value.type === 'image' && isWorkspaceUrl(value.image))
    return { ...value, image: await read(value.image) };
  if (value.type === 'file' && isWorkspaceUrl(value.data)) return { ...value, data: await read(value.data) };
  if (typeof value.type === 'string' && OUTPUT_MEDIA.has(value.type) && isWorkspaceUrl(value.data)) {
    return { ...value, data: toBase64(await read(value.data)) };
  }
  const entries = await Promise.all(
    Object.entries(value).map(async ([key, item]) => [key, await restore(item, read)] as const),
  );
  return Object.fromEntries(entries);
}

function isBytes(value: unknown): value is Uint8Array | ArrayBuffer {
  return value instanceof Uint8Array || value instanceof ArrayBuffer;
}

function toBytes(value: Uint8Array | ArrayBuffer): Uint8Array {
  return value instanceof Uint8Array ? value : new Uint8Array(value);
}

function toBase64(value: Uint8Array | ArrayBuffer): string {
  const bytes = toBytes(value);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

// The four image types every provider takes, by their first bytes.
function sniffImageType(bytes: Uint8Array): string | undefined {
  const starts = (...signature: number[]) => signature.every((byte, index) => bytes[index] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  if (starts(0x52, 0x49, 0x46, 0x46) && String.fromCharCode(...bytes.subarray(8, 12)) === 'WEBP')
    return 'image/webp';
  return undefined;
}
