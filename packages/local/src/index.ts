export { type LocalWorkspacesOptions, localWorkspaces } from './factory.js';
export { LocalWorkspace, type LocalWorkspaceOptions } from './local-workspace.js';
export { gcLocal, type LocalGcOptions, localReaper } from './reap.js';
