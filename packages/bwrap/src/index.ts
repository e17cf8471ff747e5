export type { BubblewrapWorkspaceOptions } from './bubblewrap-workspace.js';
export { BubblewrapWorkspace } from './bubblewrap-workspace.js';
export type { BwrapProviderOptions } from './bwrap-provider.js';
export { BwrapProvider, bubblewrapProblem } from './bwrap-provider.js';
export type { BwrapMounts } from './bwrap-sandbox.js';
export { BwrapSandbox, checkSandboxPath, SANDBOX_WORKDIR } from './bwrap-sandbox.js';
