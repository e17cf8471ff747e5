export { LocalProvider } from './local-provider.js';
export type { LocalSandboxOptions } from './local-sandbox.js';
export { LocalSandbox } from './local-sandbox.js';
export type { LocalWorkspaceOptions } from './local-workspace.js';
export { LocalWorkspace } from './local-workspace.js';
export type { HostMcpConnectorOptions } from './mcp-host-connector.js';
export { HostMcpConnector, usesSseTransport } from './mcp-host-connector.js';
export type { LocalGcOptions } from './reap.js';
export { gcLocal, localReaper } from './reap.js';
