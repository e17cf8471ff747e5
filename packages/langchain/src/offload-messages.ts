import {
  type BaseMessage,
  mapStoredMessagesToChatMessages,
  type StoredMessage,
} from '@langchain/core/messages';
import { type FileOptions, validateId, type Workspace, WsError } from '@ws/core';
import { readOffloadedContext } from '@ws/core/backend';
import { restoreMediaIn, storeMediaIn } from './message-media.js';

const MESSAGE_TYPES = new Set(['human', 'ai', 'system', 'tool', 'function', 'generic']);

/**
 * Offloads LangChain messages to the workspace: each message becomes one line of
 * `sessions/<sessionId>/context.jsonl` in LangChain's `StoredMessage` form (`message.toDict()`, plus
 * the message's `id`), with the bytes of its images, audio and files stored once under `data/` and
 * replaced by `workspace:///data/…` references. `Uint8Array` payloads are stored like base64 ones.
 * Read the messages back with {@link loadMessages}.
 * @returns The path of `context.jsonl` inside the sandbox.
 * @throws WsError `INVALID_ARGUMENT` for a bad session id or a message that is not a LangChain
 * message, `ABORTED` when the signal fires.
 */
export async function offloadMessages(
  workspace: Workspace,
  sessionId: string,
  messages: readonly BaseMessage[],
  options: FileOptions = {},
): Promise<string> {
  // Checked before any media is stored for a session that cannot exist.
  validateId(sessionId, 'sessionId');
  const stored: unknown[] = [];
  for (const message of messages) {
    if (typeof (message as Partial<BaseMessage>)?.toDict !== 'function')
      throw new WsError('INVALID_ARGUMENT', 'offloadMessages takes LangChain messages (BaseMessage)');
    const dict = message.toDict();
    // toDict() turns a Uint8Array into an object of numbered keys: take each field's live value, so
    // storeMediaIn still sees the bytes.
    const data: Record<string, unknown> = {};
    for (const key of Object.keys(dict.data)) {
      const live = (message as unknown as Record<string, unknown>)[key];
      data[key] = live === undefined ? (dict.data as unknown as Record<string, unknown>)[key] : live;
    }
    if (message.id !== undefined) data.id = message.id;
    stored.push(
      await storeMediaIn({ type: dict.type, data }, async (base64, mediaType) => {
        const block = await workspace.offloadData(
          { type: 'data', source: { type: 'base64', data: base64, media_type: mediaType } },
          options,
        );
        if (block.source.type !== 'url')
          throw new WsError('BACKEND_ERROR', 'offloadData returned a block without a URL');
        return block.source.url;
      }),
    );
  }
  return workspace.offloadContext(sessionId, stored, options);
}

/**
 * Reads a session's offloaded context back as LangChain messages (`HumanMessage`, `AIMessage` with
 * its `tool_calls`, `ToolMessage` with its `status` and `artifact`, …), with every media reference
 * that {@link offloadMessages} left turned into base64 again: standard blocks get `data` back,
 * `image_url` blocks a `data:` URL. A session with nothing offloaded yields `[]`.
 * @throws WsError `INVALID_ARGUMENT` when a line is not a stored LangChain message (another framework
 * wrote to the session), `NOT_FOUND` when a referenced file is gone, `ABORTED` when the signal fires.
 */
export async function loadMessages(
  workspace: Workspace,
  sessionId: string,
  options: FileOptions = {},
): Promise<BaseMessage[]> {
  const context = await readOffloadedContext(workspace, sessionId, options);
  const load = (url: string): Promise<string> =>
    context.readData(url).then((data) => Buffer.from(data).toString('base64'));
  const stored: StoredMessage[] = [];
  for (const [index, parsed] of context.messages.entries()) {
    const message = checkStored(parsed, index + 1, context.path);
    stored.push((await restoreMediaIn(message, load)) as StoredMessage);
  }
  return mapStoredMessagesToChatMessages(stored);
}

function checkStored(value: unknown, number: number, path: string): StoredMessage {
  const candidate = value as Partial<StoredMessage> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.type !== 'string' ||
    !MESSAGE_TYPES.has(candidate.type) ||
    typeof candidate.data !== 'object' ||
    candidate.data === null
  ) {
    throw new WsError('INVALID_ARGUMENT', `Line ${number} of ${path} is not a stored LangChain message`, {
      details: { path, line: number },
    });
  }
  return candidate as StoredMessage;
}
