import {
  type BaseMessage,
  type ContentBlock,
  HumanMessage,
  RemoveMessage,
  ToolMessage,
} from '@langchain/core/messages';
import { DynamicStructuredTool, type ToolRunnableConfig } from '@langchain/core/tools';
import {
  type JsonSchema,
  type Skill,
  type Tool,
  type ToolAnnotations,
  type ToolResult,
  type ToolsetOptions,
  type Workspace,
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
import { offloadMessages } from './offload-messages.js';
import { toolResultContent } from './tool-content.js';

/** Options of {@link toLangChainTool}. */
export interface LangChainToolOptions {
  /**
   * Rewrite each input schema for strict function calling (every property required, optional ones
   * nullable, no `default`), so a provider's strict mode accepts it as it is; the nulls the model
   * sends for optional properties are dropped before the tool runs. Default false: the schema is the
   * tool's own JSON Schema, which LangChain validates and providers take without strict mode.
   */
  readonly strict?: boolean;
}

/** Options of {@link langChainTools}: which tools to take from the workspace, and how to shape them. */
export interface LangChainToolsetOptions extends ToolsetOptions, LangChainToolOptions {
  /**
   * Offload what does not fit in the model's context to the workspace, as AgentScope's agent does
   * (`true` for the defaults, or {@link OffloadSettings}). A tool result longer than
   * `toolResultChars` is written whole to `sessions/<sessionId>/tool_result-<tool call id>.txt` and
   * the `ToolMessage` holds its head, its tail and that path (the tools do it: nothing to wire). The
   * conversation is kept within `contextBudgetChars` by the returned `offloadMiddleware`: put it in
   * `createAgent({ middleware: [offloadMiddleware] })`. Default: off.
   */
  readonly offload?: OffloadOption;
}

/** The state update a `beforeModel` hook returns: LangGraph's messages reducer applies it. */
export interface MessagesUpdate {
  /** A `RemoveMessage` of every message, then the messages that replace them. */
  readonly messages: BaseMessage[];
}

/**
 * A langchain v1 agent middleware (what `createMiddleware` makes) whose `beforeModel` keeps the
 * conversation within its budget: when `state.messages` passes `contextBudgetChars`, the oldest are
 * appended to `sessions/<sessionId>/context.jsonl` (media under `data/`) and removed from the
 * state, and a `HumanMessage` naming that file takes their place.
 */
export interface OffloadMiddleware {
  /** The middleware's name: `WorkspaceOffloadMiddleware`. */
  readonly name: string;
  /** Runs before each model call; returns the replacement of the state's messages, or nothing. */
  beforeModel(state: { messages: BaseMessage[] }): Promise<MessagesUpdate | undefined>;
}

/**
 * One entry of `humanInTheLoopMiddleware`'s `interruptOn` (langchain v1): the decisions a reviewer
 * may take on a call of the tool, and what the request shows them.
 */
export interface ApprovalRule {
  /** The decisions allowed: all three for a workspace tool. */
  readonly allowedDecisions: ('approve' | 'edit' | 'reject')[];
  /** What the reviewer sees: the tool's title. */
  readonly description: string;
}

/** What {@link langChainTools} returns: everything `createAgent` needs from a workspace. */
export interface LangChainToolset {
  /** The workspace's tools as LangChain tools: built-ins, then MCP tools, then `Skill`. */
  readonly tools: DynamicStructuredTool[];
  /** The text for the agent's system prompt: workspace instructions and the skill listing. */
  readonly instructions: string;
  /** The skills the agent had when the toolset was made. */
  readonly skills: Skill[];
  /**
   * The tools that change or destroy data (`Bash`, `Write`, `Edit`, and MCP tools not marked
   * read-only), keyed by name, in the shape of `humanInTheLoopMiddleware({ interruptOn })`.
   */
  readonly interruptOn: Record<string, ApprovalRule>;
  /** With `offload` on: the middleware that offloads the oldest messages. Absent otherwise. */
  readonly offloadMiddleware?: OffloadMiddleware;
}

/** The metadata every tool made here carries (`tool.metadata`). */
export interface WorkspaceToolMetadata {
  /** The workspace tool's annotations (read-only, destructive, concurrency-safe, title). */
  readonly annotations: ToolAnnotations;
  /** True when the tool may change or destroy data: the ones to put behind approval. */
  readonly destructive: boolean;
  readonly [key: string]: unknown;
}

/**
 * Gives a LangChain agent a workspace in one call: the built-in tools of `agentId`, the MCP tools of
 * its (agent, session) scope and a `Skill` tool, as LangChain tools, with the system-prompt text and
 * the approval rules of the destructive tools.
 *
 * ```ts
 * const { tools, instructions } = await langChainTools(workspace, { agentId, sessionId });
 * const agent = createAgent({ model, tools, systemPrompt: instructions });
 * ```
 *
 * Call it again after adding an MCP server or a skill. See {@link toLangChainTool} for what a call
 * returns.
 * @throws WsError `NOT_READY` before `initialize()`, `ABORTED` when `options.signal` fires.
 */
export async function langChainTools(
  workspace: Workspace,
  options: LangChainToolsetOptions = {},
): Promise<LangChainToolset> {
  const { strict, offload, ...toolsetOptions } = options;
  const settings = resolveOffload(offload, toolsetOptions.sessionId);
  const toolset = await workspaceToolset(workspace, toolsetOptions);
  const shown: ShownResult | undefined = settings
    ? (callId, result, signal) => offloadOversizeResult(workspace, settings, callId, result, signal)
    : undefined;
  const tools = toolset.tools.map((tool) => makeTool(tool, strict === undefined ? {} : { strict }, shown));
  const interruptOn: Record<string, ApprovalRule> = {};
  for (const tool of toolset.tools) {
    if (isDestructive(tool.annotations)) {
      interruptOn[tool.name] = {
        allowedDecisions: ['approve', 'edit', 'reject'],
        description: tool.annotations.title ?? tool.name,
      };
    }
  }
  const made = { tools, instructions: toolset.instructions, skills: toolset.skills, interruptOn };
  return settings ? { ...made, offloadMiddleware: contextMiddleware(workspace, settings) } : made;
}

type ShownResult = (
  callId: string | undefined,
  result: ToolResult,
  signal?: AbortSignal,
) => Promise<ToolResult>;

// langchain's `createMiddleware` brands what it makes with this symbol; `createAgent` checks it.
const MIDDLEWARE_BRAND = Symbol.for('AgentMiddleware');
// `REMOVE_ALL_MESSAGES` of @langchain/langgraph: the messages reducer drops every earlier message.
const REMOVE_ALL_MESSAGES = '__remove_all__';

function contextMiddleware(workspace: Workspace, settings: ResolvedOffload): OffloadMiddleware {
  const parker = new ContextParker<BaseMessage>(settings, {
    isPinned: (message) => message.getType() === 'system',
    // A ToolMessage answers the AIMessage before it: the kept part never starts with one.
    canStartAt: (messages, index) => messages[index]?.getType() !== 'tool',
    makeNote: (text) => new HumanMessage({ content: text }),
    textOf: (message) =>
      message.getType() === 'human' && typeof message.content === 'string' ? message.content : undefined,
    sizeOf: (message) =>
      sizeOf({ content: message.content, tool_calls: (message as { tool_calls?: unknown }).tool_calls }),
    keyOf: (message) => message.id ?? contentKey(message.toDict()),
    store: (messages, signal) =>
      offloadMessages(workspace, settings.sessionId, messages, signal ? { signal } : {}),
  });
  return {
    [MIDDLEWARE_BRAND]: true,
    name: 'WorkspaceOffloadMiddleware',
    async beforeModel(state) {
      const parked = await parker.apply(state.messages);
      // The state keeps what a parking changed: a later call has nothing to put back.
      if (!parked || parked.parked === 0) return undefined;
      return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...parked.items] };
    },
  } as OffloadMiddleware;
}

/**
 * One workspace tool as a LangChain tool (a `DynamicStructuredTool` whose schema is the tool's JSON
 * Schema). Invoked with a tool call, as agents do, it returns a `ToolMessage`: the result's content
 * as standard content blocks (text, `image`, `audio`, `file`; a plain string when it is all text),
 * `status: 'error'` when the result is an error, and the whole `ToolResult` as the `artifact`.
 * Invoked with plain arguments it returns that content alone. The `signal` of the call's config
 * reaches the tool, so aborting a run stops the command it started; misuse of the workspace itself
 * (closed, not initialized) throws.
 */
export function toLangChainTool(tool: Tool, options: LangChainToolOptions = {}): DynamicStructuredTool {
  return makeTool(tool, options, undefined);
}

function makeTool(
  tool: Tool,
  options: LangChainToolOptions,
  shown: ShownResult | undefined,
): DynamicStructuredTool {
  // A schema strict mode cannot express keeps its tool non-strict.
  const strictSchema = options.strict === true ? strictJsonSchema(tool.inputSchema) : undefined;
  const metadata: WorkspaceToolMetadata = {
    annotations: tool.annotations,
    destructive: isDestructive(tool.annotations),
  };
  return new DynamicStructuredTool<JsonSchema, Record<string, unknown>, Record<string, unknown>>({
    name: tool.name,
    description: tool.description,
    schema: strictSchema ?? tool.inputSchema,
    metadata,
    verboseParsingErrors: true,
    func: async (input, _runManager, config): Promise<ToolMessage | string | ContentBlock[]> => {
      const args = strictSchema ? dropStrictNulls(input, tool.inputSchema) : input;
      const signal = config?.signal;
      const toolCallId = toolCallIdOf(config);
      let result = await tool.call(args as Record<string, unknown>, {
        ...(signal ? { signal } : {}),
        ...(toolCallId ? { toolCallId } : {}),
      });
      if (shown) result = await shown(toolCallId, result, signal);
      const content = toolResultContent(result);
      if (toolCallId === undefined) return content;
      return new ToolMessage({
        content,
        artifact: result,
        tool_call_id: toolCallId,
        name: tool.name,
        status: result.isError ? 'error' : 'success',
      });
    },
  });
}

function toolCallIdOf(config: ToolRunnableConfig | undefined): string | undefined {
  const fromCall = config?.toolCall?.id;
  if (typeof fromCall === 'string') return fromCall;
  const fromRuntime = (config as { toolCallId?: unknown } | undefined)?.toolCallId;
  return typeof fromRuntime === 'string' ? fromRuntime : undefined;
}

// MCP's reading of the hints: a tool that is not read-only is destructive unless it says it is not.
function isDestructive(annotations: ToolAnnotations): boolean {
  return !annotations.readOnlyHint && annotations.destructiveHint !== false;
}
