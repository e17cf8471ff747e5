import type { WorkspaceFactory } from '@ws/core/backend';
import { DaytonaWorkspace, type DaytonaWorkspaceOptions } from './daytona-workspace.js';

/** Options of {@link daytonaWorkspaces}: the options every workspace shares. */
export type DaytonaWorkspacesOptions = Omit<DaytonaWorkspaceOptions, 'workspaceId'>;

/**
 * A {@link WorkspaceFactory} of Daytona workspaces, for a `WorkspaceManager`: the workspace of an id
 * is the sandbox whose labels carry that id, found again (started when stopped) by any process, with
 * the other options (snapshot or image, API key, owner tag…) as given. Building a workspace does no
 * I/O; the manager initializes it.
 *
 * ```ts
 * const manager = new WorkspaceManager({
 *   factory: daytonaWorkspaces({ snapshot: 'my-snapshot', owner: 'my-service' }),
 * });
 * ```
 *
 * @throws WsError `INVALID_ARGUMENT`, from the factory, for an unsafe id or an unusable option.
 */
export function daytonaWorkspaces(
  options: DaytonaWorkspacesOptions = {},
): WorkspaceFactory<DaytonaWorkspace> {
  const shared = { ...options };
  // The manager's request marks the sandbox (`ws.user`, `ws.agent`, `ws.session`).
  return (workspaceId, context) =>
    new DaytonaWorkspace({
      ...shared,
      workspaceId,
      ...(context?.request ? { requester: context.request } : {}),
    });
}
