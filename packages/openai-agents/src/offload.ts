import type { AgentInputItem, RunItem } from '@openai/agents';
import type { Workspace } from '@ws/core';
import { readOffloadedContext } from '@ws/core/backend';

/** Options of {@link offloadRunItems} and {@link loadRunItems}. */
export interface OffloadOptions {
  /** Aborting stops the work and rejects with `ABORTED`. */
  readonly signal?: AbortSignal;
}

// Where the SDK's items carry media: the field of each content type that holds a data URL, or an
// object whose `data` is base64 or bytes (tool outputs: `{type:'image', image:{data, mediaType}}`).
const MEDIA_FIELDS: Readonly<Record<string, string>> = {
  input_image: 'image',
  input_file: 'file',
  image: 'image',
  file: 'file',
  computer_screenshot: 'data',
};

const WORKSPACE_URL = 'workspace:///';

/**
 * Appends a run's items to the session's offloaded context (`sessions/<sessionId>/context.jsonl`,
 * one JSON line per item) through `workspace.offloadContext`, after moving every base64 payload
 * the SDK's items hold (`input_image` and `input_file` data URLs, image and file tool outputs) to
 * `data/<sha256><ext>` and leaving a `workspace:///data/…` URL in its place. Pass `result.history`
 * (or any `AgentInputItem[]`); run items (`result.newItems`) are stored as their raw items, approval
 * requests left out. Bytes (`Uint8Array`) are stored as base64 text, which the SDK reads alike.
 * Returns the context file's path inside the sandbox.
 * @throws WsError `INVALID_ARGUMENT` for a bad session id, `ABORTED` when the signal fires.
 */
export async function offloadRunItems(
  workspace: Workspace,
  sessionId: string,
  items: readonly (AgentInputItem | RunItem)[],
  options: OffloadOptions = {},
): Promise<string> {
  const call = options.signal ? { signal: options.signal } : {};
  const store = async (base64: string, mediaType: string): Promise<string> => {
    const block = await workspace.offloadData(
      { type: 'data', source: { type: 'base64', data: base64, media_type: mediaType } },
      call,
    );
    return block.source.type === 'url' ? block.source.url : '';
  };
  const raw = items.flatMap((item) => {
    if (!('rawItem' in item)) return [item];
    return item.type === 'tool_approval_item' ? [] : [item.rawItem];
  });
  const offloaded: unknown[] = [];
  for (const item of raw) offloaded.push(await offloadMedia(item, store));
  return workspace.offloadContext(sessionId, offloaded, call);
}

/**
 * Reads a session's offloaded context back as the SDK's input items, each `workspace:///data/…`
 * reference written by {@link offloadRunItems} replaced by its bytes again (as the data URL or
 * base64 text it was), so `run(agent, [...items, user('…')])` continues the conversation. A
 * session with no offloaded context gives `[]`.
 * @throws WsError `NOT_FOUND` when a referenced payload is gone from `data/`, `ABORTED` when the
 * signal fires.
 */
export async function loadRunItems(
  workspace: Workspace,
  sessionId: string,
  options: OffloadOptions = {},
): Promise<AgentInputItem[]> {
  const call = options.signal ? { signal: options.signal } : {};
  const context = await readOffloadedContext(workspace, sessionId, call);
  const payloads = new Map<string, Promise<string>>();
  const load = (url: string): Promise<string> => {
    // The `?type=` query says how to restore the payload; the file is the URL without it.
    const file = url.split('?')[0] as string;
    let payload = payloads.get(file);
    if (!payload) {
      payload = context.readData(file).then((bytes) => Buffer.from(bytes).toString('base64'));
      payloads.set(file, payload);
    }
    return payload;
  };
  const items: AgentInputItem[] = [];
  for (const parsed of context.messages) items.push((await restoreMedia(parsed, load)) as AgentInputItem);
  return items;
}

type Store = (base64: string, mediaType: string) => Promise<string>;
type Load = (url: string) => Promise<string>;

// A data URL becomes `workspace:///data/<name>?type=<media type>`; base64 or bytes in a `data` field
// become the bare URL. The query says how to put the payload back; resolving the URL ignores it.
async function offloadMedia(value: unknown, store: Store): Promise<unknown> {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) items.push(await offloadMedia(item, store));
    return items;
  }
  if (!isRecord(value) || typeof value.toJSON === 'function') return value;
  const result: Record<string, unknown> = {};
  const field = typeof value.type === 'string' ? MEDIA_FIELDS[value.type] : undefined;
  for (const [key, item] of Object.entries(value)) {
    result[key] = key === field ? await offloadPayload(item, store) : await offloadMedia(item, store);
  }
  return result;
}

async function offloadPayload(payload: unknown, store: Store): Promise<unknown> {
  if (typeof payload === 'string') {
    const parsed = parseDataUrl(payload);
    return parsed
      ? `${await store(parsed.data, parsed.mediaType)}?type=${encodeURIComponent(parsed.mediaType)}`
      : payload;
  }
  if (!isRecord(payload)) return offloadMedia(payload, store);
  const data = payload.data;
  const declared = typeof payload.mediaType === 'string' ? payload.mediaType : 'application/octet-stream';
  let url: string | undefined;
  if (data instanceof Uint8Array) {
    url = await store(Buffer.from(data).toString('base64'), declared);
  } else if (typeof data === 'string') {
    const parsed = parseDataUrl(data);
    if (parsed)
      url = `${await store(parsed.data, parsed.mediaType)}?type=${encodeURIComponent(parsed.mediaType)}`;
    else if (isBase64(data)) url = await store(data, declared);
  }
  const rest = await offloadMedia(payload, store);
  return url === undefined ? rest : { ...(rest as Record<string, unknown>), data: url };
}

async function restoreMedia(value: unknown, load: Load): Promise<unknown> {
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) items.push(await restoreMedia(item, load));
    return items;
  }
  if (!isRecord(value)) return value;
  const field = typeof value.type === 'string' ? MEDIA_FIELDS[value.type] : undefined;
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    result[key] = key === field ? await restorePayload(item, load) : await restoreMedia(item, load);
  }
  return result;
}

async function restorePayload(payload: unknown, load: Load): Promise<unknown> {
  if (typeof payload === 'string') return isWorkspaceUrl(payload) ? restoreUrl(payload, load) : payload;
  if (!isRecord(payload)) return restoreMedia(payload, load);
  const rest = (await restoreMedia(payload, load)) as Record<string, unknown>;
  return isWorkspaceUrl(payload.data) ? { ...rest, data: await restoreUrl(payload.data, load) } : rest;
}

async function restoreUrl(url: string, load: Load): Promise<string> {
  const base64 = await load(url);
  const type = new URLSearchParams(url.split('#')[0]?.split('?')[1] ?? '').get('type');
  return type === null ? base64 : `data:${type};base64,${base64}`;
}

function parseDataUrl(value: string): { mediaType: string; data: string } | undefined {
  // The media type keeps its parameters (`image/png;name=a.png`), so the URL comes back whole.
  const match = /^data:([^,]*?);base64,(.*)$/s.exec(value);
  if (!match) return undefined;
  return { mediaType: match[1] || 'application/octet-stream', data: match[2] ?? '' };
}

function isBase64(value: string): boolean {
  return value.length > 0 && value.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(value);
}

function isWorkspaceUrl(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(WORKSPACE_URL);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
