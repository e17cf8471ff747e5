export type { WorkspaceEngineOptions } from './engine.js';
export { makeDirectories, raceSignal, removeAll, WorkspaceEngine } from './engine.js';
export type { WsErrorCode, WsErrorOptions } from './errors.js';
export { abortError, fromErrno, isWsError, throwIfAborted, WsError } from './errors.js';
export type { ExecResultInit } from './exec-result.js';
export { createExecResult, decodeUtf8, encodeUtf8, normalizeInput, OutputCollector } from './exec-result.js';
export type { HostCommandOptions, HostSpawnOptions, ProcessGroup } from './host-process.js';
export { assertArgv, killGroup, runHostCommand, spawnHostProcess } from './host-process.js';
export { generateId, isValidId, MAX_ID_BYTES, validateId } from './ids.js';
export { DEFAULT_WORKSPACE_INSTRUCTIONS, formatInstructions } from './instructions.js';
export type { LayoutPaths } from './layout.js';
export { LAYOUT, layoutPaths } from './layout.js';
export type { McpClient, McpHttpTransport, McpScope, McpServerSpec, McpStdioTransport } from './mcp.js';
export type {
  Base64Source,
  DataBlock,
  OffloadableToolResult,
  Offloader,
  TextBlock,
  UrlSource,
} from './offloader.js';
export { assertPath, isWithin, joinSandboxPath, resolveSandboxPath } from './paths.js';
export { completeSandbox } from './posix-fallbacks.js';
export type { Provider, ProviderSession } from './provider.js';
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
export { ChunkQueue, collectBytes } from './streams.js';
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
export type {
  CallOptions,
  IsolationLevel,
  Workspace,
  WorkspaceCapabilities,
  WorkspaceLifecycle,
  WorkspaceResources,
  WorkspaceState,
} from './workspace.js';
