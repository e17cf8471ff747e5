export { BubblewrapWorkspace, type BubblewrapWorkspaceOptions } from './bubblewrap-workspace.js';
export { bubblewrapProblem } from './bwrap-provider.js';
export { type BwrapMounts, BwrapSandbox } from './bwrap-sandbox.js';
export { type BubblewrapWorkspacesOptions, bubblewrapWorkspaces } from './factory.js';
export { type BwrapGcOptions, bwrapReaper, gcBwrap } from './reap.js';
