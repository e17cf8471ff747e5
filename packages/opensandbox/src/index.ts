export { translateOpenSandboxError } from './errors.js';
export type { OpenSandboxWorkspacesOptions } from './factory.js';
export { openSandboxWorkspaces } from './factory.js';
export type { OpenSandboxProviderOptions } from './opensandbox-provider.js';
export {
  DEFAULT_OPENSANDBOX_IMAGE,
  DEFAULT_OPENSANDBOX_TIMEOUT_MS,
  killOwnedSandboxes,
  METADATA,
  OPENSANDBOX_WORKDIR,
  OpenSandboxProvider,
} from './opensandbox-provider.js';
export { OpenSandboxSandbox } from './opensandbox-sandbox.js';
export type { OpenSandboxWorkspaceOptions } from './opensandbox-workspace.js';
export { OpenSandboxWorkspace } from './opensandbox-workspace.js';
export type { OpenSandboxGcOptions } from './reap.js';
export { gcOpenSandbox, openSandboxReaper } from './reap.js';
