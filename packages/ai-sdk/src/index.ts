export type { OffloadOption, OffloadSettings } from '@ws/core/backend';
export { OFFLOAD_DEFAULTS } from '@ws/core/backend';
export type {
  AiSdkTool,
  AiSdkToolOptions,
  AiSdkToolset,
  AiSdkToolsOptions,
  ApprovalPolicy,
  OffloadPrepareStep,
} from './ai-sdk-tools.js';
export { aiSdkTools, isDestructive, toAiSdkTool } from './ai-sdk-tools.js';
export { loadModelMessages, offloadModelMessages } from './offload-messages.js';
export type { AiSdkToolOutput } from './tool-output.js';
export { toAiSdkToolOutput } from './tool-output.js';
