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
} as const;

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
