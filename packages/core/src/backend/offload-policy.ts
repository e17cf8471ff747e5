// The offloading an adapter turns on with its `offload` option, independent of any framework: an
// over-size tool result is written whole with `offloadToolResult` and the model gets its head, its
// tail and the file's path; a conversation past its budget has its oldest messages appended to
// `context.jsonl` and replaced by a note saying where they are. Each framework adapter wires it to its
// framework's own hooks.
import { createHash } from 'node:crypto';
import { WsError } from '../contracts/errors.js';
import type { DataBlock, OffloadableToolResult, TextBlock } from '../contracts/offloader.js';
import type { ToolContent, ToolResult } from '../contracts/tool.js';
import type { Workspace } from '../contracts/workspace.js';
import { generateId, isValidId } from './ids.js';

/**
 * What the `offload` option sets. Every size counts characters (about four to a token); the
 * defaults are AgentScope's for a model with a 128 000-token context.
 */
export interface OffloadSettings {
  /**
   * The session whose folder holds the files (`sessions/<sessionId>/`). Default: the toolset's
   * `sessionId`, else `'default'`.
   */
  readonly sessionId?: string;
  /**
   * A tool result whose text is longer than this is written whole to
   * `sessions/<sessionId>/tool_result-<call id>.txt`, and the model gets its head, its tail and that
   * path. Default 200 000 (AgentScope's `tool_result_limit`, 50 000 tokens).
   */
  readonly toolResultChars?: number;
  /**
   * How much of an offloaded result the model still sees: half from the head, half from the tail.
   * Default 20 000, or half of `toolResultChars` when that is smaller.
   */
  readonly previewChars?: number;
  /**
   * When the conversation sent to the model is longer than this, its oldest messages are appended to
   * `sessions/<sessionId>/context.jsonl` and replaced by a note naming that file. Default 409 600
   * (AgentScope's trigger, 0.8 of the context).
   */
  readonly contextBudgetChars?: number;
  /**
   * How much of the newest conversation stays when the oldest is offloaded. Default 51 200
   * (AgentScope's reserve, 0.1 of the context), or an eighth of `contextBudgetChars` when that is
   * smaller.
   */
  readonly contextKeepChars?: number;
}

/** The `offload` option: `true` for the defaults of {@link OffloadSettings}, or the settings to change. */
export type OffloadOption = boolean | OffloadSettings;

/** {@link OffloadSettings} with every default applied. */
export interface ResolvedOffload {
  /** The session whose folder holds the files (`sessions/<sessionId>/`). */
  readonly sessionId: string;
  /** The length, in characters, above which a tool result is written to a file. */
  readonly toolResultChars: number;
  /** How many characters of an offloaded result the model sees: half from its head, half from its tail. */
  readonly previewChars: number;
  /** The length, in characters, above which the oldest messages of the conversation are offloaded. */
  readonly contextBudgetChars: number;
  /** How many characters of the newest conversation stay when the oldest is offloaded. */
  readonly contextKeepChars: number;
}

/** The defaults of the `offload` sizes, in characters. */
export const OFFLOAD_DEFAULTS = {
  /** The default of `toolResultChars`: results longer than this are offloaded. */
  toolResultChars: 200_000,
  /** The default of `previewChars`, lowered to half of `toolResultChars` when that is smaller. */
  previewChars: 20_000,
  /** The default of `contextBudgetChars`: a longer conversation has its oldest messages offloaded. */
  contextBudgetChars: 409_600,
  /** The default of `contextKeepChars`, lowered to an eighth of `contextBudgetChars` when that is smaller. */
  contextKeepChars: 51_200,
} as const;

// How the note that replaces offloaded messages starts: it is recognised by it.
const NOTE_START = '<system-reminder>The earlier part of this conversation';

/**
 * The settings with their defaults, or `undefined` when offloading is off.
 * @throws WsError `INVALID_ARGUMENT` for a size that is not a positive integer, a preview not
 *   smaller than its limit, a kept part not smaller than the budget, or a bad session id.
 */
export function resolveOffload(
  option: OffloadOption | undefined,
  toolsetSessionId: string | undefined,
): ResolvedOffload | undefined {
  if (option === undefined || option === false) return undefined;
  const settings: OffloadSettings = option === true ? {} : option;
  if (typeof settings !== 'object' || settings === null)
    throw new WsError('INVALID_ARGUMENT', 'offload must be true, false or an object of settings');
  const resolved: ResolvedOffload = {
    sessionId: settings.sessionId ?? toolsetSessionId ?? 'default',
    toolResultChars: settings.toolResultChars ?? OFFLOAD_DEFAULTS.toolResultChars,
    previewChars: settings.previewChars ?? OFFLOAD_DEFAULTS.previewChars,
    contextBudgetChars: settings.contextBudgetChars ?? OFFLOAD_DEFAULTS.contextBudgetChars,
    contextKeepChars: settings.contextKeepChars ?? OFFLOAD_DEFAULTS.contextKeepChars,
  };
  for (const key of ['toolResultChars', 'previewChars', 'contextBudgetChars', 'contextKeepChars'] as const) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new WsError('INVALID_ARGUMENT', `offload.${key} must be a positive integer, not ${value}`);
  }
  // An explicit preview larger than an explicit small limit is a mistake; a default one is shrunk.
  const previewChars =
    settings.previewChars === undefined
      ? Math.min(resolved.previewChars, Math.floor(resolved.toolResultChars / 2))
      : resolved.previewChars;
  if (previewChars >= resolved.toolResultChars)
    throw new WsError(
      'INVALID_ARGUMENT',
      'offload.previewChars must be smaller than offload.toolResultChars',
    );
  const contextKeepChars =
    settings.contextKeepChars === undefined
      ? Math.min(resolved.contextKeepChars, Math.floor(resolved.contextBudgetChars / 8))
      : resolved.contextKeepChars;
  if (contextKeepChars >= resolved.contextBudgetChars)
    throw new WsError(
      'INVALID_ARGUMENT',
      'offload.contextKeepChars must be smaller than offload.contextBudgetChars',
    );
  if (!isValidId(resolved.sessionId))
    throw new WsError('INVALID_ARGUMENT', `Invalid offload session id ${JSON.stringify(resolved.sessionId)}`);
  return { ...resolved, previewChars, contextKeepChars };
}

/** The text of a result as the adapters show it: its text items, one a line. */
function textOf(result: ToolResult): string {
  return result.content
    .filter((item) => item.type === 'text')
    .map((item) => (item as { text: string }).text)
    .join('\n');
}

/**
 * `result` as the model should see it: unchanged when its text is within the limit; otherwise
 * written whole with `offloadToolResult` (media as `<data …/>` placeholders, their bytes under
 * `data/`), and replaced by one text item holding the head, the tail and the file's path, the
 * media kept. The returned result's `metadata.offloaded` names the file and the full length.
 */
export async function offloadOversizeResult(
  workspace: Workspace,
  settings: ResolvedOffload,
  callId: string | undefined,
  result: ToolResult,
  signal?: AbortSignal,
): Promise<ToolResult> {
  const text = textOf(result);
  if (text.length <= settings.toolResultChars) return result;
  const record: OffloadableToolResult = { id: fileId(callId), output: outputOf(result) };
  const path = await workspace.offloadToolResult(settings.sessionId, record, signal ? { signal } : {});
  const headChars = Math.ceil(settings.previewChars / 2);
  const head = cut(text, headChars, 'head');
  const tail = cut(text, settings.previewChars - head.length, 'tail');
  const omitted = text.length - head.length - tail.length;
  const preview = [
    head,
    `\n... [${omitted} characters omitted] ...\n`,
    tail,
    `\n<system-reminder>This tool result is ${text.length} characters long, too long for the context: only its first ${head.length} and last ${tail.length} characters are shown. The whole result is in '${path}'; read the part you need with Read (offset and limit) or search it with Grep.</system-reminder>`,
  ].join('');
  const media = result.content.filter((item) => item.type !== 'text');
  return {
    content: [{ type: 'text', text: preview }, ...media],
    isError: result.isError,
    metadata: { ...result.metadata, offloaded: { path, chars: text.length } },
  };
}

// A call id names the file; one that could not be a path segment is made into one.
function fileId(callId: string | undefined): string {
  if (callId === undefined || callId === '') return generateId();
  if (isValidId(callId)) return callId;
  let id = '';
  for (const character of Array.from(callId as string))
    id += /[/\\\p{Cc}]/u.test(character) ? '_' : character;
  id = id.replace(/^\.+/, (dots) => '_'.repeat(dots.length));
  return isValidId(id) ? id : generateId();
}

function outputOf(result: ToolResult): OffloadableToolResult['output'] {
  if (result.content.every((item) => item.type === 'text')) return textOf(result);
  const blocks: (TextBlock | DataBlock)[] = [];
  result.content.forEach((item, index) => {
    const separator = index > 0 ? '\n' : '';
    const block = blockOf(item);
    if (block.type === 'text') blocks.push({ type: 'text', text: separator + block.text });
    else {
      if (separator) blocks.push({ type: 'text', text: separator });
      blocks.push(block);
    }
  });
  return blocks;
}

function blockOf(item: ToolContent): TextBlock | DataBlock {
  switch (item.type) {
    case 'text':
      return { type: 'text', text: item.text };
    case 'image':
    case 'audio':
      return { type: 'data', source: { type: 'base64', data: item.data, media_type: item.mimeType } };
    case 'resource': {
      const name = item.resource.uri.slice(item.resource.uri.lastIndexOf('/') + 1);
      return {
        type: 'data',
        name,
        source: { type: 'base64', data: item.resource.blob, media_type: item.resource.mimeType },
      };
    }
    case 'resource_link':
      return { type: 'text', text: `[${item.name}](${item.uri})` };
  }
}

// At most `chars` characters from one end, never splitting a surrogate pair.
function cut(text: string, chars: number, end: 'head' | 'tail'): string {
  if (chars <= 0) return '';
  if (end === 'head') {
    let stop = Math.min(chars, text.length);
    if (stop < text.length && /[\uD800-\uDBFF]/.test(text[stop - 1] ?? '')) stop -= 1;
    return text.slice(0, stop);
  }
  let start = Math.max(0, text.length - chars);
  if (start > 0 && /[\uDC00-\uDFFF]/.test(text[start] ?? '')) start += 1;
  return text.slice(start);
}

/** What a framework's messages look like to {@link ContextParker}. */
export interface ParkingRules<Item> {
  /** Items that always stay in front (system prompts). */
  isPinned(item: Item): boolean;
  /** True when the kept part may start at `items[index]` (not a tool result without its call). */
  canStartAt(items: readonly Item[], index: number): boolean;
  /** The framework's user message holding `text`. */
  makeNote(text: string): Item;
  /** The text of a user message, for recognising a note this parker made. */
  textOf(item: Item): string | undefined;
  /** The item's size in characters, as the model would be sent it. */
  sizeOf(item: Item): number;
  /** Stable identity of an item across calls (a copy of it gives the same key). */
  keyOf(item: Item): string;
  /** Appends the items to the session's `context.jsonl`; returns its path. */
  store(items: readonly Item[], signal?: AbortSignal): Promise<string>;
}

/** What {@link ContextParker.apply} gives when the items change. */
export interface Parked<Item> {
  /** The items to send: the pinned ones, the note, the items kept. */
  readonly items: Item[];
  /** How many items this call offloaded. */
  readonly parked: number;
}

/**
 * Keeps a conversation within its budget: when the items sent to the model pass
 * `contextBudgetChars`, the oldest are offloaded (only once each) until about `contextKeepChars`
 * remain, and a note naming `context.jsonl` stands in their place. Framework hooks that see the
 * whole history on every call (the parked items still in it) get the same replacement each time.
 */
export class ContextParker<Item> {
  private readonly parkedKeys: string[] = [];
  private path: string | undefined;
  private parking: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly settings: ResolvedOffload,
    private readonly rules: ParkingRules<Item>,
  ) {}

  /**
   * The items to send: `undefined` when nothing changes, else the note and the items kept, with how
   * many items this call offloaded (0 when it only put back the replacement of earlier ones).
   */
  apply(items: readonly Item[], signal?: AbortSignal): Promise<Parked<Item> | undefined> {
    // One at a time: two parallel calls must not offload the same items twice.
    const next = this.parking.then(() => this.applyNow(items, signal));
    this.parking = next.catch(() => undefined);
    return next;
  }

  private async applyNow(items: readonly Item[], signal?: AbortSignal): Promise<Parked<Item> | undefined> {
    const pinned: Item[] = [];
    const rest: Item[] = [];
    let notes = 0;
    for (const item of items) {
      if (this.isNote(item)) notes += 1;
      else if (rest.length === 0 && this.rules.isPinned(item)) pinned.push(item);
      else rest.push(item);
    }
    // The items parked before, still at the start of the history the framework keeps.
    let seen = 0;
    while (
      seen < this.parkedKeys.length &&
      seen < rest.length &&
      this.rules.keyOf(rest[seen] as Item) === this.parkedKeys[seen]
    )
      seen += 1;
    const remaining = rest.slice(seen);
    const noted = seen > 0 || notes > 0;
    const size = (list: readonly Item[]) => list.reduce((sum, item) => sum + this.rules.sizeOf(item), 0);
    const total = size(pinned) + size(remaining);
    const unchanged = (): Parked<Item> | undefined =>
      noted && this.path ? { items: [...pinned, this.note(), ...remaining], parked: 0 } : undefined;
    if (total <= this.settings.contextBudgetChars) return unchanged();
    const cutAt = this.cutIndex(remaining);
    if (cutAt === undefined) return unchanged();
    const parked = remaining.slice(0, cutAt);
    this.path = await this.rules.store(parked, signal);
    for (const item of parked) this.parkedKeys.push(this.rules.keyOf(item));
    return { items: [...pinned, this.note(), ...remaining.slice(cutAt)], parked: parked.length };
  }

  // The first place the kept part may start with at most `contextKeepChars` after it; else the last
  // place it may start at all, so each parking frees what it can.
  private cutIndex(items: readonly Item[]): number | undefined {
    let after = 0;
    let best: number | undefined;
    for (let index = items.length - 1; index >= 1; index--) {
      after += this.rules.sizeOf(items[index] as Item);
      if (!this.rules.canStartAt(items, index)) continue;
      if (best === undefined || after <= this.settings.contextKeepChars) best = index;
      if (after > this.settings.contextKeepChars) break;
    }
    return best;
  }

  private isNote(item: Item): boolean {
    return this.rules.textOf(item)?.startsWith(NOTE_START) === true;
  }

  private note(): Item {
    const count = this.parkedKeys.length;
    return this.rules.makeNote(
      `${NOTE_START} (${count} message${count === 1 ? '' : 's'}) is offloaded to '${this.path}', one JSON message per line; you can refer to it with Read or Grep when needed.</system-reminder>`,
    );
  }
}

/**
 * The size of a value in characters, as it would be sent: strings by length, bytes by their base64
 * length, other values by their JSON length; object keys count.
 */
export function sizeOf(value: unknown, seen: Set<object> = new Set()): number {
  if (typeof value === 'string') return value.length;
  if (value === null || value === undefined) return 4;
  if (typeof value !== 'object') return String(value).length;
  if (value instanceof Uint8Array || value instanceof ArrayBuffer) return Math.ceil(value.byteLength / 3) * 4;
  if (value instanceof URL) return value.href.length;
  if (seen.has(value)) return 0;
  seen.add(value);
  let total = 2;
  if (Array.isArray(value)) for (const item of value) total += sizeOf(item, seen) + 1;
  else
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) total += key.length + 3 + sizeOf(item, seen);
    }
  return total;
}

/** A key for a JSON-able value that a deep copy of it shares: the hash of its JSON. */
export function contentKey(value: unknown): string {
  const json = JSON.stringify(value, (_key, item: unknown) =>
    item instanceof Uint8Array ? Buffer.from(item).toString('base64') : item,
  );
  return createHash('sha256')
    .update(json ?? 'undefined')
    .digest('hex');
}
