import { abortError, isWsError, WsError } from '../contracts/errors.js';
import type { Workspace } from '../contracts/workspace.js';

/** Who asked for a workspace: the user, agent and session of the request that created it. */
export interface WorkspaceRequester {
  /** The request's user, when it named one. */
  readonly userId?: string | undefined;
  /** The request's agent, when it named one. */
  readonly agentId?: string | undefined;
  /** The request's session, when it named one. */
  readonly sessionId?: string | undefined;
}

/** What a {@link WorkspaceFactory} is given besides the id. */
export interface WorkspaceFactoryContext {
  /** Fires when the manager gives up on this creation (it is being disposed). */
  readonly signal: AbortSignal;
  /**
   * The user, agent and session of the request that created the workspace (later requests may share
   * it under `per_agent` or `per_user`), always given by a manager: the backends' factories tag
   * what they create with them.
   */
  readonly request?: WorkspaceRequester;
}

/**
 * Builds the workspace of one id, on any backend:
 * `(workspaceId) => new DockerWorkspace({ workspaceId, owner: 'my-service' })`. The manager calls
 * `initialize()` on it (an already initialized one is fine). The workspace's `id` must be `workspaceId`.
 */
export type WorkspaceFactory<W extends Workspace> = (
  workspaceId: string,
  context: WorkspaceFactoryContext,
) => W | Promise<W>;

/**
 * The workspace `factory` builds for `workspaceId`, initialized. On failure a workspace already built
 * is closed (its close errors ignored) before the error is thrown.
 *
 * @throws WsError `INVALID_ARGUMENT` when the factory returns no workspace or one of another id;
 *   `ABORTED` when `signal` fired (before the call, or making it fail); what the factory or
 *   `initialize()` throws, a non-`WsError` wrapped as `BACKEND_ERROR` with its `cause`.
 */
export async function openWorkspace<W extends Workspace>(
  factory: WorkspaceFactory<W>,
  workspaceId: string,
  signal: AbortSignal,
  request: WorkspaceRequester = {},
): Promise<W> {
  let workspace: W | undefined;
  try {
    signal.throwIfAborted();
    workspace = await factory(workspaceId, { signal, request });
    if (typeof workspace !== 'object' || workspace === null || workspace.id !== workspaceId)
      throw new WsError(
        'INVALID_ARGUMENT',
        `The factory returned ${typeof workspace === 'object' && workspace !== null ? `the workspace ${JSON.stringify(workspace.id)}` : String(workspace)} for the id ${JSON.stringify(workspaceId)}`,
        { details: { workspaceId } },
      );
    await workspace.initialize({ signal });
    return workspace;
  } catch (thrown) {
    const error = isWsError(thrown)
      ? thrown
      : signal.aborted
        ? abortError(signal)
        : new WsError('BACKEND_ERROR', `Creating the workspace ${workspaceId} failed: ${String(thrown)}`, {
            cause: thrown,
          });
    await workspace?.close?.().catch(() => {});
    throw error;
  }
}
