export type { BubblewrapWorkspaceOptions } from './bubblewrap-workspace.js';
export { BubblewrapWorkspace } from './bubblewrap-workspace.js';
export type { BwrapProviderOptions } from './bwrap-provider.js';
export { BwrapProvider, bubblewrapProblem } from './bwrap-provider.js';
export type { BwrapMounts } from './bwrap-sandbox.js';
export { BwrapSandbox, checkSandboxPath, SANDBOX_WORKDIR } from './bwrap-sandbox.js';
export { type BubblewrapWorkspacesOptions, bubblewrapWorkspaces } from './factory.js';
export type { BwrapGcOptions } from './reap.js';
export { bwrapReaper, gcBwrap } from './reap.js';
