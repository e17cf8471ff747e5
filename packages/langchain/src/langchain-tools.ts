import { type ContentBlock, ToolMessage } from '@langchain/core/messages';
import { DynamicStructuredTool, type ToolRunnableConfig } from '@langchain/core/tools';
import {
  type JsonSchema,
  type Skill,
  type Tool,
  type ToolAnnotations,
  type ToolsetOptions,
  type Workspace,
  workspaceToolset,
} from '@ws/core';
import { dropStrictNulls, strictJsonSchema } from '@ws/core/backend';
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
export interface LangChainToolsetOptions extends ToolsetOptions, LangChainToolOptions {}

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
  const { strict, ...toolsetOptions } = options;
  const toolset = await workspaceToolset(workspace, toolsetOptions);
  const tools = toolset.tools.map((tool) => toLangChainTool(tool, strict === undefined ? {} : { strict }));
  const interruptOn: Record<string, ApprovalRule> = {};
  for (const tool of toolset.tools) {
    if (isDestructive(tool.annotations)) {
      interruptOn[tool.name] = {
        allowedDecisions: ['approve', 'edit', 'reject'],
        description: tool.annotations.title ?? tool.name,
      };
    }
  }
  return { tools, instructions: toolset.instructions, skills: toolset.skills, interruptOn };
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
      const result = await tool.call(args as Record<string, unknown>, signal ? { signal } : {});
      const content = toolResultContent(result);
      const toolCallId = toolCallIdOf(config);
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
