export type { OffloadOption, OffloadSettings } from '@ws/core/backend';
export { OFFLOAD_DEFAULTS } from '@ws/core/backend';
export type { OffloadOptions } from './offload.js';
export { loadRunItems, offloadRunItems } from './offload.js';
export { isStrictSchema } from './strict-schema.js';
export type { OpenAiToolOutput } from './tool-output.js';
export { toErrorText, toToolOutput } from './tool-output.js';
export type {
  ApprovalPolicy,
  OpenAiAgentToolOptions,
  OpenAiAgentToolset,
  OpenAiAgentToolsOptions,
  WorkspaceFunctionTool,
  WorkspaceToolCustomData,
} from './tools.js';
export { openAiAgentTools, toOpenAiAgentTool } from './tools.js';
