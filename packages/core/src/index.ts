/**
 * `@ws/core`: what a user of any backend touches. The workspace protocol and its options, the
 * sandbox's call and result types, tools and their content, offloading, MCP and skill types, and
 * the one error type. Backend authors import `@ws/core/backend` too; the gateway's protocol and host
 * client are `@ws/core/gateway`.
 */

export { generateId, isValidId, validateId } from './backend/ids.js';
export type { WsErrorCode, WsErrorOptions } from './contracts/errors.js';
export { isWsError, WsError } from './contracts/errors.js';
export type { WorkspaceEvent, WorkspaceEventListener } from './contracts/events.js';
export type {
  McpClient,
  McpHttpTransport,
  McpScope,
  McpServerSpec,
  McpStdioTransport,
} from './contracts/mcp.js';
export type {
  Base64Source,
  DataBlock,
  OffloadableToolResult,
  Offloader,
  TextBlock,
  UrlSource,
} from './contracts/offloader.js';
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
  ReadFileOptions,
  ReadStreamOptions,
  RemoveOptions,
  Sandbox,
  SandboxCapabilities,
  SandboxOperation,
  SandboxProcess,
  SpawnOptions,
  WriteOptions,
} from './contracts/sandbox.js';
export { DEFAULT_MAX_OUTPUT_BYTES } from './contracts/sandbox.js';
export type {
  NetworkPolicy,
  Privileges,
  SandboxPolicyOptions,
  WorkspaceLimits,
} from './contracts/sandbox-policy.js';
export type { Skill, SkillArchive } from './contracts/skill.js';
export type {
  AudioContent,
  EmbeddedResourceContent,
  ImageContent,
  JsonSchema,
  ResourceLinkContent,
  TextContent,
  Tool,
  ToolAnnotations,
  ToolCallOptions,
  ToolContent,
  ToolResult,
} from './contracts/tool.js';
export type {
  CallOptions,
  IsolationLevel,
  Workspace,
  WorkspaceCapabilities,
  WorkspaceLifecycle,
  WorkspaceResources,
  WorkspaceState,
} from './contracts/workspace.js';
export type {
  CommonWorkspaceOptions,
  SearchMode,
  WorkspacePackages,
} from './contracts/workspace-options.js';
export { DEFAULT_WORKSPACE_INSTRUCTIONS } from './internal/instructions.js';
export { resolveWorkspaceUrl } from './internal/offload/offloader.js';
// The manager and the reaper contract; their other types are reachable through these
// (`WorkspaceManagerOptions['factory']`, `GcReport['kept'][number]`) or in `@ws/core/backend`.
export type { GcOptions, GcReport } from './manager/gc.js';
export type { IsolationPolicy } from './manager/isolation.js';
export { assignWorkspaceId } from './manager/isolation.js';
export type { AcquireOptions, WorkspaceLease, WorkspaceManagerOptions } from './manager/workspace-manager.js';
export { WorkspaceManager } from './manager/workspace-manager.js';
export type { ToolsetOptions, WorkspaceToolset } from './toolset.js';
export { SKILL_TOOL_NAME, workspaceToolset } from './toolset.js';
