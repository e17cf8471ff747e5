/**
 * `@ws/core/gateway`: the in-sandbox gateway's wire protocol and the host's side of it. Its client
 * and link (launch, health, relaunch, no request sent twice), the sandbox and MCP connector that go
 * through it, its installation and the one start-up every sandboxed backend uses
 * (`sandboxGatewayLauncher`). `@ws/gateway` (the program) uses the protocol types.
 */

export type { GatewayChannel, GatewayRequestOptions } from './gateway/client.js';
export {
  errorFromResponse,
  GATEWAY_MAX_JSON_BYTES,
  GatewayClient,
  GatewayConnectionError,
  isConnectionFailure,
  parseGatewayJson,
  readText,
} from './gateway/client.js';
export { GatewayMcpConnector } from './gateway/gateway-mcp.js';
export type { GatewaySandboxOptions } from './gateway/gateway-sandbox.js';
export { DEFERRED_GATEWAY_START, GatewaySandbox } from './gateway/gateway-sandbox.js';
export type { HostNode, ProvidedNode, ProvideNodeOptions } from './gateway/host-node.js';
export { hostNode, provideNode } from './gateway/host-node.js';
export {
  GATEWAY_MIN_NODE_MAJOR,
  gatewayBundleName,
  installGateway,
  probeNode,
  readGatewayAsset,
} from './gateway/install.js';
export type { GatewayLauncher, LaunchedGateway } from './gateway/link.js';
export { GATEWAY_START_TIMEOUT_MS, GatewayLink } from './gateway/link.js';
export type { MuxEndpointOptions } from './gateway/mux.js';
export { MuxEndpoint } from './gateway/mux.js';
export type {
  GatewayErrorBody,
  GatewayExecFrame,
  GatewayExecRequest,
  GatewayFileOp,
  GatewayHealth,
  GatewayMcpCall,
  GatewayMcpConnect,
} from './gateway/protocol.js';
export { GATEWAY_MUX_PATH, GATEWAY_MUX_UPGRADE, GATEWAY_PROTOCOL_VERSION } from './gateway/protocol.js';
export type { RemoteGatewayOptions, RemoteGatewaySession } from './gateway/remote.js';
export { openRemoteGateway } from './gateway/remote.js';
export type { RemoteAttachmentOptions, RemoteDirectSandbox } from './gateway/remote-attachment.js';
export { RemoteAttachment } from './gateway/remote-attachment.js';
export type { GatewaySocketPlace, ProxiedEndpoint, SandboxGatewayOptions } from './gateway/start.js';
export {
  preparedLauncher,
  refusingLauncher,
  STDIO_IDLE_EXIT_MS,
  STDIO_PING_MS,
  STDIO_SILENCE_MS,
  sandboxGatewayLauncher,
} from './gateway/start.js';
export { normalizeMcpSpec } from './internal/mcp/spec.js';
