/**
 * `@ws/core/backend`: what a backend author needs besides `@ws/core`. The `Provider` a backend
 * implements and the `WorkspaceEngine` its public class extends; core's POSIX fallbacks; running
 * host processes and stopping them; host folders a sandbox must not reach; paths, quoting and ids;
 * the MCP connector a backend with its own MCP clients supplies. The gateway start-up is in
 * `@ws/core/gateway`. Authors of framework adapters find here what the adapters share: reading an
 * offloaded context back, and the strict-mode rewrite of tool schemas.
 */

export type { AttachedRecords } from './backend/attachments.js';
export { Attachments, readAttachedRecords } from './backend/attachments.js';
export { boundedReadFile, READ_FILE_MAX_BYTES, withBoundedReads } from './backend/bounded-read.js';
export { DEBUG_NAMESPACES, debugEnabled, debugLine } from './backend/debug-log.js';
export type { WorkspaceEngineOptions } from './backend/engine.js';
export { WorkspaceEngine } from './backend/engine.js';
export type { ExecResultInit } from './backend/exec-result.js';
export {
  createExecResult,
  decodeUtf8,
  encodeUtf8,
  normalizeInput,
  OutputCollector,
} from './backend/exec-result.js';
export { removeTree } from './backend/held-folder.js';
export { clearWriterLeftovers } from './backend/host-leftovers.js';
export {
  assertDeletableHostDir,
  hostTag,
  makeHostDirs,
  ownedTempDir,
  pinnedSocketChannel,
  pinSandboxSocket,
  privateHostDir,
  processAlive,
} from './backend/host-paths.js';
export type {
  HostCommandOptions,
  HostLaunchWrapper,
  HostSpawnOptions,
  ProcessGroup,
} from './backend/host-process.js';
export {
  assertArgv,
  groupAlive,
  killGroup,
  ProcessGroups,
  runHostCommand,
  settledWithin,
  spawnHostProcess,
  stopWithGrace,
} from './backend/host-process.js';
export { generateId, isValidId, MAX_ID_BYTES, validateId } from './backend/ids.js';
export { checkUserLabels, requesterLabels, WS_LABELS } from './backend/labels.js';
export type {
  McpCallOptions,
  McpConnector,
  McpScopeKey,
  McpSession,
  McpToolInfo,
} from './backend/mcp-connector.js';
export { toolResultFromMcp } from './backend/mcp-convert.js';
export type { BackendEventSink } from './backend/observer.js';
export type {
  OffloadOption,
  OffloadSettings,
  Parked,
  ParkingRules,
  ResolvedOffload,
} from './backend/offload-policy.js';
export {
  ContextParker,
  contentKey,
  OFFLOAD_DEFAULTS,
  offloadOversizeResult,
  resolveOffload,
  sizeOf,
} from './backend/offload-policy.js';
export type { OffloadedContext } from './backend/offload-reader.js';
export { readOffloadedContext } from './backend/offload-reader.js';
export { cgroupOomKills } from './backend/oom-report.js';
export { assertPath, isWithin, joinSandboxPath, resolveSandboxPath } from './backend/paths.js';
export { completeSandbox } from './backend/posix-fallbacks.js';
export type { Provider, ProviderOpenOptions, ProviderSession } from './backend/provider.js';
export { shellJoin, shellQuote } from './backend/quote.js';
export type { ReapCandidate, ReapProbe } from './backend/reap-loop.js';
export { reapCandidates, timeOf } from './backend/reap-loop.js';
export { cwdError, enterCwd } from './backend/remote-cwd.js';
export type { RetryOptions, RetryPolicy } from './backend/retry.js';
export {
  DEFAULT_RETRY_ATTEMPTS,
  isRetryable,
  mayHaveRun,
  retryAfterMs,
  retryEvents,
  withRetry,
} from './backend/retry.js';
export type { PolicySupport, ResolvedNetwork, ResolvedPolicy } from './backend/sandbox-policy.js';
export {
  checkSandboxPolicy,
  POLICY_KEYS,
  policyUnsupported,
  refuseUnsupportedPolicy,
} from './backend/sandbox-policy.js';
export { ChunkQueue, collectBytes, TailBuffer } from './backend/streams.js';
export { dropStrictNulls, strictJsonSchema } from './backend/strict-schema.js';
export type { VendorErrorClass, VendorErrorKind, VendorErrors } from './backend/vendor-errors.js';
export {
  fileErrorFromMessage,
  hasTimeoutAbort,
  isNetworkFailure,
  responseHeader,
  vendorErrorMapper,
} from './backend/vendor-errors.js';
export type { WorkspaceUser } from './backend/workspace-user.js';
export { checkWorkspaceUser, noUserSwitchHint } from './backend/workspace-user.js';
export {
  POSIX_WRITE_SCRIPTS,
  temporaryBeside,
  writeThroughTemporary,
} from './backend/write-through-temporary.js';
export { abortError, fromErrno, throwIfAborted } from './contracts/errors.js';
export type { BackendEvent } from './contracts/events.js';
export type { WorkspaceLimit } from './contracts/sandbox-policy.js';
export { DEFAULT_PIDS_LIMIT } from './contracts/sandbox-policy.js';
export {
  checkOptionKeys,
  engineOptions,
  type OptionKeys,
  type OwnOptions,
  refuseRenamedOptions,
  splitOptions,
} from './contracts/workspace-options.js';
export type { LayoutPaths } from './internal/layout.js';
export { layoutPaths } from './internal/layout.js';
export { mcpHttpProtocol } from './internal/mcp/spec.js';
export type { WorkspaceCloseReason, WorkspaceManagerEvents } from './manager/events.js';
export type { GcKeepReason, GcKept, GcResource, Reaper } from './manager/gc.js';
export { checkGcOptions, GcLedger } from './manager/gc.js';
export type { WorkspaceRequest } from './manager/isolation.js';
export type {
  WorkspaceFactory,
  WorkspaceFactoryContext,
  WorkspaceInfo,
  WorkspaceManagerStats,
  WorkspaceRequester,
} from './manager/workspace-manager.js';
