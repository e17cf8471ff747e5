export { killOwnedSandboxes } from './e2b-provider.js';
export { E2BWorkspace, type E2BWorkspaceOptions } from './e2b-workspace.js';
export { type E2BWorkspacesOptions, e2bWorkspaces } from './factory.js';
export { type E2BGcOptions, e2bReaper, gcE2B } from './reap.js';
