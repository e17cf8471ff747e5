import { join, resolve } from 'node:path';
import { WsError } from '@ws/core';
import { validateId, type WorkspaceFactory } from '@ws/core/backend';
import { DockerWorkspace, type DockerWorkspaceOptions } from './docker-workspace.js';

/** Options of {@link dockerWorkspaces}: the options every workspace shares, and where their files go. */
export interface DockerWorkspacesOptions
  extends Omit<DockerWorkspaceOptions, 'workspaceId' | 'hostWorkdir' | 'volume'> {
  /**
   * The host folder holding one workdir per workspace, `<baseDir>/<workspaceId>`, bind-mounted at
   * `/workspace` (relative: against the cwd now). Without one, a workspace's files live in its
   * container and go with it when the workspace is closed or evicted.
   */
  baseDir?: string;
}

/**
 * A {@link WorkspaceFactory} of Docker workspaces, for a `WorkspaceManager`: the workspace of an id is
 * the container named after it (found again by any process), with the files in
 * `<baseDir>/<workspaceId>` when a `baseDir` is given, and the other options (image, owner tag,
 * client…) as given. Building a workspace does no I/O; the manager initializes it.
 *
 * ```ts
 * const manager = new WorkspaceManager({
 *   factory: dockerWorkspaces({ baseDir: '/srv/workspaces', owner: 'my-service' }),
 * });
 * ```
 *
 * @throws WsError `INVALID_ARGUMENT` for an empty `baseDir` (and, from the factory, for an id that is
 *   not one path segment, or an unknown option).
 */
export function dockerWorkspaces(options: DockerWorkspacesOptions = {}): WorkspaceFactory<DockerWorkspace> {
  const { baseDir, ...shared } = options;
  if (baseDir !== undefined && (typeof baseDir !== 'string' || baseDir === ''))
    throw new WsError('INVALID_ARGUMENT', `baseDir must be a host folder, not ${JSON.stringify(baseDir)}`);
  const base = baseDir === undefined ? undefined : resolve(baseDir);
  // The manager's request marks the container (`ws.user`, `ws.agent`, `ws.session`).
  return (workspaceId, context) =>
    new DockerWorkspace({
      ...shared,
      workspaceId,
      ...(context?.request ? { requester: context.request } : {}),
      ...(base === undefined ? {} : { hostWorkdir: join(base, validateId(workspaceId, 'workspaceId')) }),
    });
}
