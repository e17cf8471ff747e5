export type { E2BProviderOptions } from './e2b-provider.js';
export {
  DEFAULT_E2B_TIMEOUT_MS,
  E2B_WORKDIR,
  E2BProvider,
  killOwnedSandboxes,
  METADATA,
} from './e2b-provider.js';
export { E2BSandbox } from './e2b-sandbox.js';
export type { E2BWorkspaceOptions } from './e2b-workspace.js';
export { E2BWorkspace } from './e2b-workspace.js';
export { translateE2BError } from './errors.js';
export { type E2BWorkspacesOptions, e2bWorkspaces } from './factory.js';
export type { E2BGcOptions } from './reap.js';
export { e2bReaper, gcE2B } from './reap.js';
