/**
 * `@ws/langchain`: a workspace as LangChain.js tools in one call, and LangChain messages offloaded to
 * the workspace and read back.
 */

export type {
  ApprovalRule,
  LangChainToolOptions,
  LangChainToolset,
  LangChainToolsetOptions,
  WorkspaceToolMetadata,
} from './langchain-tools.js';
export { langChainTools, toLangChainTool } from './langchain-tools.js';
export { loadMessages, offloadMessages } from './offload-messages.js';
export { toolResultContent } from './tool-content.js';
