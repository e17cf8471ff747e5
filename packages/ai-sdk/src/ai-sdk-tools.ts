import {
  type Skill,
  type Tool,
  type ToolResult,
  type ToolsetOptions,
  type Workspace,
  WsError,
  workspaceToolset,
} from '@ws/core';
import { dropStrictNulls, strictJsonSchema } from '@ws/core/backend';
import { dynamicTool, type JSONSchema7, jsonSchema, type Tool as SdkTool } from 'ai';
import { toAiSdkToolOutput } from './tool-output.js';

/** An AI SDK tool made from a workspace tool: its `execute` resolves to the workspace's `ToolResult`. */
export type AiSdkTool = SdkTool<unknown, ToolResult> & { type: 'dynamic' };

/**
 * Which tools wait for the user's approval (the AI SDK's `needsApproval`):
 * - `'none'` (the default): none;
 * - `'destructive'`: tools that may destroy data, in MCP's sense: `destructiveHint: true`, or not
 *   read-only without `destructiveHint: false` (`Bash`, `Write`, `Edit`, most MCP writers);
 * - `'all'`: every tool;
 * - a function: the tools it answers `true` for.
 */
export type ApprovalPolicy = 'none' | 'destructive' | 'all' | ((tool: Tool) => boolean);

/** Options of {@link toAiSdkTool}. */
export interface AiSdkToolOptions {
  /** Which tools need approval before they run. Default `'none'`. */
  readonly approve?: ApprovalPolicy;
  /**
   * Ask the provider for strict mode (`strict: true`) on every tool whose schema allows it: the
   * schema is rewritten as strict mode wants (every property required, optional ones nullable) and
   * the `null`s of left-out properties are removed before the call. Default: not set, so the
   * schemas go to the provider as they are.
   */
  readonly strict?: boolean;
}

/** Options of {@link aiSdkTools}. */
export interface AiSdkToolsOptions extends ToolsetOptions, AiSdkToolOptions {}

/** A workspace as AI SDK tools: pass `tools` and `instructions` to `generateText` / `streamText`. */
export interface AiSdkToolset {
  /** The tools by name (`Bash`, `Read`, …, `mcp__<server>__<tool>`, `Skill`): a `ToolSet`. */
  readonly tools: Record<string, AiSdkTool>;
  /** The system-prompt text: the workspace's instructions and the agent's skill listing. */
  readonly instructions: string;
  /** The skills the agent had when the tools were made. */
  readonly skills: Skill[];
}

/**
 * Gives an AI SDK agent a workspace, in one call: the built-in tools, the MCP tools of the
 * (agent, session) scope and the `Skill` tool, as AI SDK tools, and the system-prompt text.
 *
 * ```ts
 * const { tools, instructions } = await aiSdkTools(workspace, { agentId, sessionId });
 * await generateText({ model, tools, system: instructions, stopWhen: stepCountIs(20), prompt });
 * ```
 *
 * Call it again after adding an MCP server or a skill.
 * @throws WsError `NOT_READY` before `initialize()`, `ABORTED` when `signal` fires.
 */
export async function aiSdkTools(
  workspace: Workspace,
  options: AiSdkToolsOptions = {},
): Promise<AiSdkToolset> {
  const { approve, strict, ...toolsetOptions } = options;
  const toolset = await workspaceToolset(workspace, toolsetOptions);
  const perTool = {
    ...(approve === undefined ? {} : { approve }),
    ...(strict === undefined ? {} : { strict }),
  };
  const tools: Record<string, AiSdkTool> = {};
  for (const tool of toolset.tools) tools[tool.name] = toAiSdkTool(tool, perTool);
  return { tools, instructions: toolset.instructions, skills: toolset.skills };
}

/**
 * One workspace tool as an AI SDK dynamic tool. `execute` calls the tool with the step's
 * `abortSignal` and resolves to its `ToolResult` (what `steps[].toolResults` record, `metadata`
 * included); `toModelOutput` turns that into what the model sees ({@link toAiSdkToolOutput}): text,
 * images as image parts, failures as `error-text`.
 * @throws WsError `INVALID_ARGUMENT` for an unknown `approve` value.
 */
export function toAiSdkTool(tool: Tool, options: AiSdkToolOptions = {}): AiSdkTool {
  const needsApproval = approvalOf(tool, options.approve ?? 'none');
  const strictSchema = options.strict ? strictJsonSchema(tool.inputSchema) : undefined;
  const made = dynamicTool({
    description: tool.description,
    ...(tool.annotations.title === undefined ? {} : { title: tool.annotations.title }),
    inputSchema: jsonSchema((strictSchema ?? tool.inputSchema) as JSONSchema7),
    ...(needsApproval ? { needsApproval } : {}),
    execute: async (input, { abortSignal }) => {
      const args = strictSchema ? dropStrictNulls(input, tool.inputSchema) : input;
      return tool.call(args as Record<string, unknown>, abortSignal ? { signal: abortSignal } : {});
    },
    toModelOutput: ({ output }) => toAiSdkToolOutput(output as ToolResult),
  }) as AiSdkTool;
  if (options.strict !== undefined) made.strict = strictSchema !== undefined;
  return made;
}

function approvalOf(tool: Tool, policy: ApprovalPolicy): boolean {
  if (typeof policy === 'function') return policy(tool);
  switch (policy) {
    case 'none':
      return false;
    case 'all':
      return true;
    case 'destructive':
      return isDestructive(tool);
    default:
      throw new WsError('INVALID_ARGUMENT', `Unknown approval policy ${JSON.stringify(policy)}`);
  }
}

/** True for a tool that may destroy data: `destructiveHint`, which MCP presumes for a non-read-only tool. */
export function isDestructive(tool: Tool): boolean {
  const { readOnlyHint, destructiveHint } = tool.annotations;
  return destructiveHint === true || (readOnlyHint === false && destructiveHint !== false);
}
