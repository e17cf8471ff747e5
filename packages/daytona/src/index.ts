export type { DaytonaConnection } from './client.js';
export type { DaytonaResources } from './daytona-provider.js';
export { DaytonaWorkspace, type DaytonaWorkspaceOptions } from './daytona-workspace.js';
export { type DaytonaWorkspacesOptions, daytonaWorkspaces } from './factory.js';
export { type DaytonaGcOptions, daytonaReaper, gcDaytona } from './reap.js';
export { deleteOwnedSandboxes } from './sandbox-lifecycle.js';
