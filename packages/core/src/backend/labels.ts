import { WsError } from '../contracts/errors.js';

/**
 * The keys every backend marks what a workspace makes with (a container's labels, a sandbox's
 * metadata or labels, a Kubernetes object's labels and annotations): how a reaper or a second host
 * finds a workspace's sandbox and tells it from anyone else's. Keys starting with `ws.` are reserved.
 */
export const WS_LABELS = {
  /** `true` on every container or object a workspace made (where listings filter by a fixed value). */
  workspace: 'ws.workspace',
  /** The workspace id. */
  id: 'ws.workspace.id',
  /** A hash of the workspace id, where the id itself cannot be a label value (Kubernetes). */
  key: 'ws.workspace.key',
  /** The workspaces' owner tag (their `owner` option). */
  owner: 'ws.owner',
  /** When the workspace made it (ISO 8601). */
  created: 'ws.created',
  /** When the last workspace object let it go (ISO 8601), where the service does not say. */
  released: 'ws.released',
  /** The user it was opened for (a manager request's `userId`; the `requester` option). */
  user: 'ws.user',
  /** The agent it was opened for. */
  agent: 'ws.agent',
  /** The session it was opened for. */
  session: 'ws.session',
} as const;

/**
 * The `ws.user`, `ws.agent` and `ws.session` marks of a requester, those it names; with `fits`, only
 * the values the service can store (the others are left out).
 */
export function requesterLabels(
  requester: { readonly userId?: string; readonly agentId?: string; readonly sessionId?: string } | undefined,
  fits: (value: string) => boolean = () => true,
): Record<string, string> {
  const out: Record<string, string> = {};
  const add = (key: string, value: string | undefined) => {
    if (value !== undefined && value !== '' && fits(value)) out[key] = value;
  };
  add(WS_LABELS.user, requester?.userId);
  add(WS_LABELS.agent, requester?.agentId);
  add(WS_LABELS.session, requester?.sessionId);
  return out;
}

/**
 * Checks that none of a user's own labels (or metadata) take a reserved `ws.` key.
 * @param kind What the backend calls them, for the message: `Label`, `Metadata`.
 * @throws WsError `INVALID_ARGUMENT` naming every reserved key given (`details.keys`).
 */
export function checkUserLabels(given: Readonly<Record<string, unknown>> | undefined, kind: string): void {
  const reserved = Object.keys(given ?? {}).filter((key) => key.startsWith('ws.'));
  if (reserved.length > 0)
    throw new WsError(
      'INVALID_ARGUMENT',
      `${kind} keys starting with "ws." are the workspace's own: ${reserved.join(', ')}`,
      { details: { keys: reserved } },
    );
}
