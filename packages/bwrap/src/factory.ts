import { join, resolve } from 'node:path';
import { WsError } from '@ws/core';
import { validateId, type WorkspaceFactory } from '@ws/core/backend';
import { BubblewrapWorkspace, type BubblewrapWorkspaceOptions } from './bubblewrap-workspace.js';

/** Options of {@link bubblewrapWorkspaces}: a base folder, and the options every workspace shares. */
export interface BubblewrapWorkspacesOptions
  extends Omit<BubblewrapWorkspaceOptions, 'workspaceId' | 'hostWorkdir'> {
  /**
   * The folder holding one workdir per workspace, `<baseDir>/<workspaceId>` (mode 0700; relative:
   * against the cwd now). Must not overlap `hostRuntimeDir`.
   */
  baseDir: string;
}

/**
 * A {@link WorkspaceFactory} of bubblewrap workspaces, for a `WorkspaceManager`: the workspace of an
 * id binds `<baseDir>/<workspaceId>` at `/workspace` (created when first opened, found again after a
 * restart), with the other options as given. Building a workspace does no I/O; the manager
 * initializes it. `gcBwrap({ roots: [baseDir], … })` clears what killed processes left.
 *
 * ```ts
 * const manager = new WorkspaceManager({ factory: bubblewrapWorkspaces({ baseDir: '/srv/workspaces' }) });
 * ```
 *
 * @throws WsError `INVALID_ARGUMENT` for a missing `baseDir` (and, from the factory, for an id that is
 *   not one path segment, or an unknown option).
 */
export function bubblewrapWorkspaces(
  options: BubblewrapWorkspacesOptions,
): WorkspaceFactory<BubblewrapWorkspace> {
  const { baseDir, ...shared } = options ?? ({} as BubblewrapWorkspacesOptions);
  if (typeof baseDir !== 'string' || baseDir === '')
    throw new WsError('INVALID_ARGUMENT', 'bubblewrapWorkspaces needs a baseDir: the folder of the workdirs');
  const base = resolve(baseDir);
  return (workspaceId) =>
    new BubblewrapWorkspace({
      ...shared,
      workspaceId,
      hostWorkdir: join(base, validateId(workspaceId, 'workspaceId')),
    });
}
