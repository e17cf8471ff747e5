import {
  type Skill,
  type Tool,
  type ToolResult,
  type ToolsetOptions,
  type Workspace,
  WsError,
  workspaceToolset,
} from '@ws/core';
import {
  ContextParker,
  contentKey,
  dropStrictNulls,
  type OffloadOption,
  offloadOversizeResult,
  type ResolvedOffload,
  resolveOffload,
  sizeOf,
  strictJsonSchema,
} from '@ws/core/backend';
import { dynamicTool, type JSONSchema7, jsonSchema, type ModelMessage, type Tool as SdkTool } from 'ai';
import { offloadModelMessages } from './offload-messages.js';
import { toAiSdkToolOutput } from './tool-output.js';

/** An AI SDK tool made from a workspace tool: its `execute` resolves to the workspace's `ToolResult`. */
export type AiSdkTool = SdkTool<unknown, ToolResult> & {
  /** Always `'dynamic'`: the tool's input and output types are known only at run time. */
  type: 'dynamic';
};

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
export interface AiSdkToolsOptions extends ToolsetOptions, AiSdkToolOptions {
  /**
   * Offload what does not fit in the model's context to the workspace, as AgentScope's agent does
   * (`true` for the defaults, or {@link OffloadSettings}). A tool result longer than
   * `toolResultChars` is written whole to `sessions/<sessionId>/tool_result-<toolCallId>.txt` and the
   * model gets its head, its tail and that path (the tools' `toModelOutput` does it: nothing to
   * wire). The conversation is kept within `contextBudgetChars` by the returned `prepareStep`:
   * pass it to `generateText` / `streamText`. Default: off.
   */
  readonly offload?: OffloadOption;
}

/** The hook {@link aiSdkTools} returns with `offload` on: pass it as `prepareStep`. */
export type OffloadPrepareStep = (options: {
  /** The conversation the next step would send to the model. */
  readonly messages: ModelMessage[];
}) => Promise<{
  /** The conversation to send instead, with its oldest messages offloaded; absent: send it unchanged. */
  messages?: ModelMessage[];
}>;

/** A workspace as AI SDK tools: pass `tools` and `instructions` to `generateText` / `streamText`. */
export interface AiSdkToolset {
  /** The tools by name (`Bash`, `Read`, …, `mcp__<server>__<tool>`, `Skill`): a `ToolSet`. */
  readonly tools: Record<string, AiSdkTool>;
  /** The system-prompt text: the workspace's instructions and the agent's skill listing. */
  readonly instructions: string;
  /** The skills the agent had when the tools were made. */
  readonly skills: Skill[];
  /**
   * With `offload` on: the `prepareStep` that keeps the conversation within its budget (its oldest
   * messages appended to `sessions/<sessionId>/context.jsonl`, media under `data/`, and a note
   * naming the file in their place; the SDK's own history is left as it is, the same replacement is
   * made on every step). Absent otherwise.
   */
  readonly prepareStep?: OffloadPrepareStep;
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
  const { approve, strict, offload, ...toolsetOptions } = options;
  const settings = resolveOffload(offload, toolsetOptions.sessionId);
  const toolset = await workspaceToolset(workspace, toolsetOptions);
  const perTool = {
    ...(approve === undefined ? {} : { approve }),
    ...(strict === undefined ? {} : { strict }),
  };
  const shown = settings ? resultOffloader(workspace, settings) : undefined;
  const tools: Record<string, AiSdkTool> = {};
  for (const tool of toolset.tools) tools[tool.name] = makeTool(tool, perTool, shown);
  const made = { tools, instructions: toolset.instructions, skills: toolset.skills };
  return settings ? { ...made, prepareStep: contextPrepareStep(workspace, settings) } : made;
}

type ShownResult = (toolCallId: string, result: ToolResult) => Promise<ToolResult>;

const REMEMBERED_OFFLOADS = 256;

// `toModelOutput` may run more than once for a call (`convertToModelMessages` runs it too): one
// file per call id.
function resultOffloader(workspace: Workspace, settings: ResolvedOffload): ShownResult {
  const offloaded = new Map<string, Promise<ToolResult>>();
  return (toolCallId, result) => {
    const earlier = offloaded.get(toolCallId);
    if (earlier) return earlier;
    const shown = offloadOversizeResult(workspace, settings, toolCallId, result);
    return shown.then((value) => {
      if (value === result) return value;
      offloaded.set(toolCallId, shown);
      // The SDK asks again only for recent calls: the oldest entries go.
      for (const oldest of offloaded.keys()) {
        if (offloaded.size <= REMEMBERED_OFFLOADS) break;
        offloaded.delete(oldest);
      }
      return value;
    });
  };
}

function contextPrepareStep(workspace: Workspace, settings: ResolvedOffload): OffloadPrepareStep {
  const keys = new WeakMap<object, string>();
  const parker = new ContextParker<ModelMessage>(settings, {
    isPinned: (message) => message.role === 'system',
    // A tool message answers the assistant message before it: the kept part never starts with one.
    canStartAt: (messages, index) => messages[index]?.role !== 'tool',
    makeNote: (text) => ({ role: 'user', content: text }),
    textOf: (message) =>
      message.role === 'user' && typeof message.content === 'string' ? message.content : undefined,
    sizeOf: (message) => sizeOf(message),
    keyOf: (message) => {
      let key = keys.get(message);
      if (key === undefined) {
        key = contentKey(message);
        keys.set(message, key);
      }
      return key;
    },
    store: (messages, signal) =>
      offloadModelMessages(workspace, settings.sessionId, messages, signal ? { signal } : {}),
  });
  return async ({ messages }) => {
    const parked = await parker.apply(messages);
    return parked ? { messages: parked.items } : {};
  };
}

/**
 * One workspace tool as an AI SDK dynamic tool. `execute` calls the tool with the step's
 * `abortSignal` and resolves to its `ToolResult` (what `steps[].toolResults` record, `metadata`
 * included); `toModelOutput` turns that into what the model sees ({@link toAiSdkToolOutput}): text,
 * images as image parts, failures as `error-text`.
 * @throws WsError `INVALID_ARGUMENT` for an unknown `approve` value.
 */
export function toAiSdkTool(tool: Tool, options: AiSdkToolOptions = {}): AiSdkTool {
  return makeTool(tool, options, undefined);
}

function makeTool(tool: Tool, options: AiSdkToolOptions, shown: ShownResult | undefined): AiSdkTool {
  const needsApproval = approvalOf(tool, options.approve ?? 'none');
  const strictSchema = options.strict ? strictJsonSchema(tool.inputSchema) : undefined;
  const made = dynamicTool({
    description: tool.description,
    ...(tool.annotations.title === undefined ? {} : { title: tool.annotations.title }),
    inputSchema: jsonSchema((strictSchema ?? tool.inputSchema) as JSONSchema7),
    ...(needsApproval ? { needsApproval } : {}),
    execute: async (input, { abortSignal, toolCallId }) => {
      const args = strictSchema ? dropStrictNulls(input, tool.inputSchema) : input;
      return tool.call(args as Record<string, unknown>, {
        ...(abortSignal ? { signal: abortSignal } : {}),
        ...(toolCallId ? { toolCallId } : {}),
      });
    },
    toModelOutput: shown
      ? async ({ toolCallId, output }) => toAiSdkToolOutput(await shown(toolCallId, output as ToolResult))
      : ({ output }) => toAiSdkToolOutput(output as ToolResult),
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
