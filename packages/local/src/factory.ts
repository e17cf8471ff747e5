import { join, resolve } from 'node:path';
import { WsError } from '@ws/core';
import { validateId, type WorkspaceFactory } from '@ws/core/backend';
import { LocalWorkspace, type LocalWorkspaceOptions } from './local-workspace.js';

/** Options of {@link localWorkspaces}: a base folder, and the options every workspace shares. */
export interface LocalWorkspacesOptions extends Omit<LocalWorkspaceOptions, 'workspaceId' | 'hostWorkdir'> {
  /** The folder of the workdirs, one per workspace: `<baseDir>/<workspaceId>` (relative: to the cwd now). */
  baseDir: string;
}

/**
 * A {@link WorkspaceFactory} of local workspaces, for a `WorkspaceManager`: the workspace of an id
 * works in `<baseDir>/<workspaceId>` (created when first opened, found again after a restart), with
 * the other options as given. Building a workspace does no I/O; the manager initializes it.
 *
 * ```ts
 * const manager = new WorkspaceManager({
 *   factory: localWorkspaces({ baseDir: '/srv/workspaces' }),
 * });
 * ```
 *
 * @throws WsError `INVALID_ARGUMENT` for a missing `baseDir` (and, from the factory, for an id that is
 *   not one path segment, or an unknown option).
 */
export function localWorkspaces(options: LocalWorkspacesOptions): WorkspaceFactory<LocalWorkspace> {
  const { baseDir, ...shared } = options ?? ({} as LocalWorkspacesOptions);
  if (typeof baseDir !== 'string' || baseDir === '')
    throw new WsError('INVALID_ARGUMENT', 'localWorkspaces needs a baseDir: the folder of the workdirs');
  const base = resolve(baseDir);
  return (workspaceId) =>
    new LocalWorkspace({
      ...shared,
      workspaceId,
      hostWorkdir: join(base, validateId(workspaceId, 'workspaceId')),
    });
}
