/**
 * `@ws/langchain`: a workspace as LangChain.js tools in one call, and LangChain messages offloaded to
 * the workspace and read back.
 */

export type { OffloadOption, OffloadSettings } from '@ws/core/backend';
export { OFFLOAD_DEFAULTS } from '@ws/core/backend';
export type {
  ApprovalRule,
  LangChainToolOptions,
  LangChainToolset,
  LangChainToolsetOptions,
  MessagesUpdate,
  OffloadMiddleware,
  WorkspaceToolMetadata,
} from './langchain-tools.js';
export { langChainTools, toLangChainTool } from './langchain-tools.js';
export { loadMessages, offloadMessages } from './offload-messages.js';
export { toolResultContent } from './tool-content.js';
