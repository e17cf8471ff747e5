import {
  type AgentInputItem,
  type CallModelInputFilter,
  type FunctionTool,
  type RunContext,
  tool as sdkTool,
  type ToolOutputCustomData,
} from '@openai/agents';
import {
  isWsError,
  type JsonSchema,
  type Skill,
  type Tool,
  type ToolResult,
  type ToolsetOptions,
  type Workspace,
  workspaceToolset,
} from '@ws/core';
import {
  ContextParker,
  contentKey,
  type OffloadOption,
  offloadOversizeResult,
  type ResolvedOffload,
  resolveOffload,
  sizeOf,
} from '@ws/core/backend';
import { offloadRunItems } from './offload.js';
import { isStrictSchema } from './strict-schema.js';
import { toErrorText, toToolOutput } from './tool-output.js';

/** A workspace tool as an SDK function tool: JSON Schema parameters, text or structured output. */
export type WorkspaceFunctionTool = FunctionTool<unknown, FunctionTool['parameters'], unknown>;

/** Decides which tools wait for a human's approval: `true` for the destructive ones, or a predicate. */
export type ApprovalPolicy = boolean | ((tool: Tool) => boolean);

/** Options of {@link toOpenAiAgentTool}. */
export interface OpenAiAgentToolOptions {
  /**
   * Send the tools in the SDK's strict mode (default `true`): the SDK rewrites each schema so every
   * property is required (optional ones become nullable) and drops the model's `null`s before the
   * tool runs. A tool whose schema cannot be made strict (an open object, `oneOf`, …) is sent
   * non-strict on its own; its `strict` property says which it got. `false` sends every schema as
   * it is.
   */
  readonly strict?: boolean;
  /**
   * Human-in-the-loop approval through the SDK's `needsApproval` (default `false`: no tool waits).
   * `true` marks the destructive tools (`destructiveHint`, or not read-only when the hint is
   * absent, as MCP defines it: `Bash`, `Write`, `Edit` among the built-ins); a function picks them.
   * A run then stops with `result.interruptions` until you approve or reject each call.
   */
  readonly needsApproval?: ApprovalPolicy;
}

/** Options of {@link openAiAgentTools}: which tools to gather, and how to present them. */
export interface OpenAiAgentToolsOptions extends ToolsetOptions, OpenAiAgentToolOptions {
  /**
   * Offload what does not fit in the model's context to the workspace, as AgentScope's agent does
   * (`true` for the defaults, or {@link OffloadSettings}). A tool result longer than
   * `toolResultChars` is written whole to `sessions/<sessionId>/tool_result-<callId>.txt` and the
   * model gets its head, its tail and that path (the tools do it: nothing to wire). The
   * conversation is kept within `contextBudgetChars` by the returned `callModelInputFilter`: pass it
   * to `run(agent, input, { callModelInputFilter })` or a `Runner`. Default: off.
   */
  readonly offload?: OffloadOption;
}

/** A workspace as the OpenAI Agents SDK takes it: `new Agent({ instructions, tools })`. */
export interface OpenAiAgentToolset {
  /** The built-in tools, the scope's MCP tools and `Skill`, as the SDK's function tools. */
  readonly tools: WorkspaceFunctionTool[];
  /** The workspace's instructions and the agent's skill listing, for the agent's `instructions`. */
  readonly instructions: string;
  /** The skills the agent had when the toolset was made. */
  readonly skills: Skill[];
  /**
   * With `offload` on: the run option that keeps each model call within the budget (the oldest
   * items appended to `sessions/<sessionId>/context.jsonl`, media under `data/`, and a note naming
   * the file in their place; the run's own history is left as it is). Absent otherwise.
   */
  readonly callModelInputFilter?: CallModelInputFilter;
}

/**
 * What each tool output item of a run carries as `customData` (`RunToolCallOutputItem.customData`):
 * whether the call failed, and the result's metadata (Edit's `diff`, an MCP `structuredContent`).
 */
export interface WorkspaceToolCustomData extends ToolOutputCustomData {
  /** True when the tool reported a failure; the model saw it as an error text. */
  readonly isError: boolean;
  /** The result's metadata, when it had any. */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/**
 * Gives an OpenAI Agents SDK agent a workspace in one call: the tools of
 * {@link workspaceToolset} (built-ins, the (agent, session) scope's MCP tools, `Skill`) as the
 * SDK's function tools, and the instructions to put in the agent's system prompt.
 *
 * ```ts
 * const { tools, instructions } = await openAiAgentTools(workspace, { agentId, sessionId });
 * const agent = new Agent({ name: 'coder', instructions, tools });
 * ```
 *
 * Call it again after adding an MCP server or a skill. Aborting `options.signal` stops the listing.
 * @throws WsError `NOT_READY` before `initialize()`, `ABORTED` when the signal fires.
 */
export async function openAiAgentTools(
  workspace: Workspace,
  options: OpenAiAgentToolsOptions = {},
): Promise<OpenAiAgentToolset> {
  const { strict, needsApproval, offload, ...listing } = options;
  const settings = resolveOffload(offload, listing.sessionId);
  const toolset = await workspaceToolset(workspace, listing);
  const presentation = {
    ...(strict === undefined ? {} : { strict }),
    ...(needsApproval === undefined ? {} : { needsApproval }),
  };
  const shown: ShownResult | undefined = settings
    ? (callId, result, signal) => offloadOversizeResult(workspace, settings, callId, result, signal)
    : undefined;
  const made = {
    tools: toolset.tools.map((tool) => makeTool(tool, presentation, shown)),
    instructions: toolset.instructions,
    skills: toolset.skills,
  };
  return settings ? { ...made, callModelInputFilter: contextFilter(workspace, settings) } : made;
}

type ShownResult = (
  callId: string | undefined,
  result: ToolResult,
  signal?: AbortSignal,
) => Promise<ToolResult>;

// Item types that answer an earlier call: the kept part never starts with one.
const ANSWER_TYPE = /_(result|output)$/;

function contextFilter(workspace: Workspace, settings: ResolvedOffload): CallModelInputFilter {
  const parker = new ContextParker<AgentInputItem>(settings, {
    isPinned: (item) => 'role' in item && (item.role === 'system' || (item.role as string) === 'developer'),
    canStartAt: (items, index) => {
      const type = items[index]?.type;
      // A call goes with the reasoning item before it.
      return !(typeof type === 'string' && ANSWER_TYPE.test(type)) && items[index - 1]?.type !== 'reasoning';
    },
    makeNote: (text) => ({ type: 'message', role: 'user', content: text }),
    textOf: (item) =>
      'role' in item && item.role === 'user' && typeof item.content === 'string' ? item.content : undefined,
    sizeOf: (item) => sizeOf(item),
    // The SDK hands the filter copies: items are known by their content.
    keyOf: (item) => contentKey(item),
    store: (items, signal) => offloadRunItems(workspace, settings.sessionId, items, signal ? { signal } : {}),
  });
  return async ({ modelData }) => {
    const parked = await parker.apply(modelData.input);
    return parked ? { ...modelData, input: parked.items } : modelData;
  };
}

/**
 * One workspace tool as an SDK function tool. The run's abort signal reaches `Tool.call` (aborting
 * a run kills the command it was running). A successful result becomes text, or text, images and
 * files (see `toToolOutput`); a failed one is raised as a tool error, which the SDK records on the
 * tool's trace span and shows the model as a text starting with `Error:`. Misuse of the workspace
 * (closed, not initialised) is not shown to the model: it fails the run.
 */
export function toOpenAiAgentTool(tool: Tool, options: OpenAiAgentToolOptions = {}): WorkspaceFunctionTool {
  return makeTool(tool, options, undefined);
}

function makeTool(
  tool: Tool,
  options: OpenAiAgentToolOptions,
  shown: ShownResult | undefined,
): WorkspaceFunctionTool {
  // The results of this tool's calls, by run and call id, until the SDK asks for their custom data.
  const results = new WeakMap<object, Map<string, ToolResult>>();
  const base = {
    name: tool.name,
    description: tool.description,
    needsApproval: needsApproval(tool, options.needsApproval ?? false),
    async execute(
      input: unknown,
      runContext?: RunContext,
      details?: { signal?: AbortSignal; toolCall?: { callId: string } },
    ) {
      const signal = details?.signal;
      let result: ToolResult;
      try {
        const toolCallId = details?.toolCall?.callId;
        result = await tool.call((input ?? {}) as Record<string, unknown>, {
          ...(signal ? { signal } : {}),
          ...(toolCallId ? { toolCallId } : {}),
        });
      } catch (error) {
        // The SDK recognises its own signal's reason and ends the run as an aborted one.
        if (signal?.aborted && isWsError(error, 'ABORTED')) throw signal.reason;
        throw error;
      }
      const callId = details?.toolCall?.callId;
      if (shown) result = await shown(callId, result, signal);
      if (runContext && callId !== undefined) {
        const calls = results.get(runContext) ?? new Map<string, ToolResult>();
        calls.set(callId, result);
        results.set(runContext, calls);
      }
      if (result.isError) throw new WorkspaceToolError(result);
      return toToolOutput(result);
    },
    errorFunction(_context: RunContext, error: unknown): string {
      if (error instanceof WorkspaceToolError) return toErrorText(error.result);
      // A closed or unready workspace, or an abort: the run itself has to stop.
      if (isWsError(error)) throw error;
      // The SDK's own failures before the call (arguments it could not parse) are the model's to fix.
      return `Error: ${error instanceof Error ? error.message : String(error)}`;
    },
    customDataExtractor({ runContext, toolCall }: { runContext: RunContext; toolCall: { callId: string } }) {
      const calls = results.get(runContext);
      const result = calls?.get(toolCall.callId);
      if (!result) return undefined;
      calls?.delete(toolCall.callId);
      const data: WorkspaceToolCustomData = {
        isError: result.isError,
        ...(result.metadata ? { metadata: result.metadata } : {}),
      };
      return data;
    },
  };
  if (options.strict !== false) {
    try {
      const strict = sdkTool({ ...base, parameters: tool.inputSchema as StrictParameters, strict: true });
      // The SDK converts what it can; an object it leaves open would be refused by the API.
      if (isStrictSchema(strict.parameters)) return strict as WorkspaceFunctionTool;
    } catch {
      // A schema the SDK cannot make strict (oneOf, allOf, an ambiguous optional field): send it as it is.
    }
  }
  return sdkTool({
    ...base,
    parameters: nonStrictParameters(tool.inputSchema),
    strict: false,
  }) as WorkspaceFunctionTool;
}

type StrictParameters = Extract<FunctionTool['parameters'], { additionalProperties: false }>;
type NonStrictParameters = Extract<FunctionTool['parameters'], { additionalProperties: true }>;

// The schema as the tool declares it (additionalProperties included: the SDK's types ask for `true`,
// the API takes either), with the object type and properties the API requires at the root.
function nonStrictParameters(schema: JsonSchema): NonStrictParameters {
  return {
    ...schema,
    type: 'object',
    properties: (schema.properties as NonStrictParameters['properties'] | undefined) ?? {},
    required: Array.isArray(schema.required) ? (schema.required as string[]) : [],
  } as NonStrictParameters;
}

function needsApproval(tool: Tool, policy: ApprovalPolicy): boolean {
  if (typeof policy === 'function') return policy(tool);
  if (!policy) return false;
  return tool.annotations.destructiveHint ?? !tool.annotations.readOnlyHint;
}

/** A tool result with `isError`, raised so the SDK treats the call as failed. */
class WorkspaceToolError extends Error {
  constructor(readonly result: ToolResult) {
    super(toErrorText(result));
    this.name = 'WorkspaceToolError';
  }
}
