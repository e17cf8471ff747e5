export type { WorkspaceEngineOptions } from './engine.js';
export { WorkspaceEngine } from './engine.js';
export { makeDirectories, raceSignal, removeAll } from './engine-support.js';
export type { WsErrorCode, WsErrorOptions } from './errors.js';
export { abortError, fromErrno, isWsError, throwIfAborted, WsError } from './errors.js';
export type { ExecResultInit } from './exec-result.js';
export { createExecResult, decodeUtf8, encodeUtf8, normalizeInput, OutputCollector } from './exec-result.js';
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
export type { GatewaySandboxOptions } from './gateway/gateway-sandbox.js';
export { GatewayMcpConnector, GatewaySandbox } from './gateway/gateway-sandbox.js';
export {
  GATEWAY_MIN_NODE_MAJOR,
  gatewayBundleName,
  installGateway,
  probeNode,
  readGatewayAsset,
} from './gateway/install.js';
export type { GatewayLauncher, LaunchedGateway } from './gateway/link.js';
export { GATEWAY_START_TIMEOUT_MS, GatewayLink } from './gateway/link.js';
export type {
  GatewayErrorBody,
  GatewayExecFrame,
  GatewayExecRequest,
  GatewayFileOp,
  GatewayHealth,
  GatewayMcpCall,
  GatewayMcpConnect,
} from './gateway/protocol.js';
export { GATEWAY_PROTOCOL_VERSION } from './gateway/protocol.js';
export type { GatewaySocketPlace, SandboxGatewayOptions } from './gateway/start.js';
export { sandboxGatewayLauncher } from './gateway/start.js';
export {
  assertDeletableHostDir,
  hostTag,
  ownedTempDir,
  pinnedSocketChannel,
  pinSandboxSocket,
  privateHostDir,
} from './host-paths.js';
export type { HostCommandOptions, HostSpawnOptions, ProcessGroup } from './host-process.js';
export {
  assertArgv,
  killGroup,
  ProcessGroups,
  runHostCommand,
  spawnHostProcess,
  stopWithGrace,
} from './host-process.js';
export { generateId, isValidId, MAX_ID_BYTES, validateId } from './ids.js';
export { DEFAULT_WORKSPACE_INSTRUCTIONS, formatInstructions } from './instructions.js';
export type { LayoutPaths } from './layout.js';
export { LAYOUT, layoutPaths } from './layout.js';
export type { McpCallOptions, McpConnector, McpScopeKey, McpSession, McpToolInfo } from './mcp/connector.js';
export { toolResultFromMcp } from './mcp/convert.js';
export type { McpRegistryOptions, McpStore } from './mcp/registry.js';
export { McpRegistry } from './mcp/registry.js';
export type { NormalizedMcpSpec } from './mcp/spec.js';
export {
  fromStoredSpec,
  MCP_FILE_VERSION,
  MCP_NAME_PATTERN,
  normalizeMcpSpec,
  toolAllowed,
  toStoredSpec,
} from './mcp/spec.js';
export type { McpClient, McpHttpTransport, McpScope, McpServerSpec, McpStdioTransport } from './mcp.js';
export type { MediaHit } from './offload/media.js';
export { extensionFor, parseDataUrl, recognizeMedia, WORKSPACE_URL_PREFIX } from './offload/media.js';
export { OffloadStore, resolveWorkspaceUrl } from './offload/offloader.js';
export type {
  Base64Source,
  DataBlock,
  OffloadableToolResult,
  Offloader,
  TextBlock,
  UrlSource,
} from './offloader.js';
export { assertPath, isWithin, joinSandboxPath, resolveSandboxPath } from './paths.js';
export { completeSandbox, temporaryBeside } from './posix-fallbacks.js';
export type { Provider, ProviderOpenOptions, ProviderSession } from './provider.js';
export { shellJoin, shellQuote } from './quote.js';
export type {
  CompleteSandbox,
  DirEntry,
  ExecInput,
  ExecOptions,
  ExecResult,
  FileOptions,
  FileStat,
  FileType,
  MkdirOptions,
  OutputListener,
  ProcessExit,
  ReadStreamOptions,
  RemoveOptions,
  Sandbox,
  SandboxCapabilities,
  SandboxOperation,
  SandboxProcess,
  SpawnOptions,
  WriteOptions,
} from './sandbox.js';
export { DEFAULT_MAX_OUTPUT_BYTES } from './sandbox.js';
export type { Skill, SkillArchive } from './skill.js';
export type { ArchiveMember } from './skills/archive.js';
export { DEFAULT_MAX_EXTRACTED_BYTES, readArchive, safeMemberPath } from './skills/archive.js';
export type { SkillDocument } from './skills/front-matter.js';
export { parseSkillDocument } from './skills/front-matter.js';
export type { SkillScope } from './skills/skill-store.js';
export { resolveHostPath, SkillStore } from './skills/skill-store.js';
export { ChunkQueue, collectBytes, TailBuffer } from './streams.js';
export type {
  AudioContent,
  ImageContent,
  JsonSchema,
  ResourceLinkContent,
  TextContent,
  Tool,
  ToolAnnotations,
  ToolCallOptions,
  ToolContent,
  ToolResult,
} from './tool.js';
export type { BashInput } from './tools/bash-tool.js';
export {
  BASH_DEFAULT_TIMEOUT_MS,
  BASH_MAX_OUTPUT_CHARS,
  BASH_MAX_TIMEOUT_MS,
} from './tools/bash-tool.js';
export { createBuiltinTools } from './tools/builtin-tools.js';
export type { ToolEnvironment } from './tools/common.js';
export { unifiedDiff } from './tools/diff.js';
export type { EditInput } from './tools/edit-tool.js';
export {
  compileGlob,
  GLOB_MAX_ALTERNATIVES,
  GLOB_MAX_BRACE_DEPTH,
  GLOB_MAX_PATTERN_LENGTH,
  type GlobMatcher,
} from './tools/glob-pattern.js';
export type { GlobInput } from './tools/glob-tool.js';
export { GLOB_MAX_RESULTS } from './tools/glob-tool.js';
export type { GrepInput, GrepOutputMode } from './tools/grep-tool.js';
export { GREP_DEFAULT_HEAD_LIMIT } from './tools/grep-tool.js';
export { PDF_MAX_PAGES_PER_READ, PDF_MAX_PAGES_WITHOUT_RANGE } from './tools/pdf.js';
export type { ReadCacheEntry } from './tools/read-cache.js';
export { ReadCache } from './tools/read-cache.js';
export type { ReadInput } from './tools/read-tool.js';
export {
  DEFAULT_MODEL_INPUT_TYPES,
  MAX_EDITABLE_FILE_BYTES,
  READ_MAX_LINE_CHARS,
  READ_MAX_LINES,
} from './tools/read-tool.js';
export type { SearchMode } from './tools/search-tools.js';
export { SearchTools } from './tools/search-tools.js';
export { sha256Hex } from './tools/text.js';
export type { WriteInput } from './tools/write-tool.js';
export type {
  CallOptions,
  IsolationLevel,
  Workspace,
  WorkspaceCapabilities,
  WorkspaceLifecycle,
  WorkspaceResources,
  WorkspaceState,
} from './workspace.js';
export type { CommonWorkspaceOptions } from './workspace-options.js';
export { checkOptionKeys, engineOptions } from './workspace-options.js';
