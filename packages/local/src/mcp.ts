// Entry point with the host MCP connector only.

export type { HostMcpConnectorOptions } from './mcp-host-connector.js';
export { HostMcpConnector, usesSseTransport } from './mcp-host-connector.js';
