export { type OpenSandboxWorkspacesOptions, openSandboxWorkspaces } from './factory.js';
export { killOwnedSandboxes } from './opensandbox-provider.js';
export { OpenSandboxWorkspace, type OpenSandboxWorkspaceOptions } from './opensandbox-workspace.js';
export { gcOpenSandbox, type OpenSandboxGcOptions, openSandboxReaper } from './reap.js';
