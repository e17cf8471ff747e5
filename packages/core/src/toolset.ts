import { isWsError } from './contracts/errors.js';
import type { Skill } from './contracts/skill.js';
import type { Tool, ToolCallOptions, ToolResult } from './contracts/tool.js';
import type { Workspace } from './contracts/workspace.js';

/** Options of {@link workspaceToolset}. */
export interface ToolsetOptions {
  /** The agent: its read-before-edit memory, its skill partition and its MCP scope. */
  readonly agentId?: string;
  /** The session: MCP servers declared for it join the agent's shared ones. */
  readonly sessionId?: string;
  /** Include the MCP servers' tools (`mcp__<server>__<tool>`). Default true. */
  readonly mcp?: boolean;
  /** Include the `Skill` tool and the skill listing in the instructions. Default true. */
  readonly skills?: boolean;
  /** Aborting stops the listing and rejects with `ABORTED`. */
  readonly signal?: AbortSignal;
}

/** What an agent needs from a workspace: its tools and the text to append to its system prompt. */
export interface WorkspaceToolset {
  /** The built-in tools, then the MCP tools, then `Skill` when the agent has skills. */
  readonly tools: Tool[];
  /** The workspace's instructions, followed by the list of the agent's skills when it has any. */
  readonly instructions: string;
  /** The skills the agent had when the toolset was made. */
  readonly skills: Skill[];
}

/** The name of the tool that shows a skill's instructions. */
export const SKILL_TOOL_NAME = 'Skill';

/**
 * Gathers everything an agent framework hands a model from one workspace, as AgentScope's toolkit
 * does: the built-in tools of one agent, the MCP tools of one (agent, session) scope, and a `Skill`
 * tool with a listing of the agent's skills for the system prompt. Framework adapters map the
 * result onto their own tool shapes; call it again after adding an MCP server or a skill.
 * @throws WsError `NOT_READY` before `initialize()`, `ABORTED` when the signal fires.
 */
export async function workspaceToolset(
  workspace: Workspace,
  options: ToolsetOptions = {},
): Promise<WorkspaceToolset> {
  const call = options.signal ? { signal: options.signal } : {};
  const agent = options.agentId === undefined ? {} : { agentId: options.agentId };
  const scope = options.sessionId === undefined ? agent : { ...agent, sessionId: options.sessionId };
  const [builtins, mcpTools, skills] = await Promise.all([
    workspace.listTools({ ...agent, ...call }),
    options.mcp === false ? [] : listMcpTools(workspace, scope, options.signal),
    options.skills === false ? [] : workspace.listSkills({ ...agent, ...call }),
  ]);
  const tools = [...builtins, ...mcpTools];
  let instructions = workspace.getInstructions();
  if (skills.length > 0) {
    tools.push(skillTool(workspace, options.agentId));
    instructions += `\n\n${skillListing(skills)}`;
  }
  return { tools, instructions, skills };
}

async function listMcpTools(
  workspace: Workspace,
  scope: { agentId?: string; sessionId?: string },
  signal: AbortSignal | undefined,
): Promise<Tool[]> {
  const call = signal ? { signal } : {};
  const clients = await workspace.listMcps({ ...scope, ...call });
  const lists = await Promise.all(clients.map((client) => client.listTools(call)));
  return lists.flat();
}

/** The system-prompt fragment that tells the model which skills it has and how to use one. */
function skillListing(skills: readonly Skill[]): string {
  const lines = skills.map((skill) => `- ${skill.name}: ${oneLine(skill.description)} (${skill.dir})`);
  return [
    '# Skills',
    `Call the \`${SKILL_TOOL_NAME}\` tool with a skill's name to read its instructions before using it; its folder holds any scripts and files it mentions.`,
    ...lines,
  ].join('\n');
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The `Skill` tool: the named skill's SKILL.md body and folder, read fresh on each call. */
function skillTool(workspace: Workspace, agentId: string | undefined): Tool<{ name?: unknown }> {
  return {
    name: SKILL_TOOL_NAME,
    description:
      "Shows a skill's instructions (its SKILL.md without the front matter) and the folder that holds its files. Use it before following a skill listed in the system prompt.",
    inputSchema: {
      type: 'object',
      properties: { name: { type: 'string', description: "The skill's name, as listed." } },
      required: ['name'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, concurrencySafe: true, idempotentHint: true, title: 'Read a skill' },
    async call(input: { name?: unknown }, options: ToolCallOptions = {}): Promise<ToolResult> {
      if (typeof input?.name !== 'string' || input.name === '')
        return error('Error: missing required parameter `name`');
      let skills: Skill[];
      try {
        skills = await workspace.listSkills({
          ...(agentId === undefined ? {} : { agentId }),
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch (cause) {
        if (
          isWsError(cause) &&
          (cause.code === 'ABORTED' || cause.code === 'DISPOSED' || cause.code === 'NOT_READY')
        )
          throw cause;
        return error(`Error: the skills could not be listed: ${(cause as Error).message}`);
      }
      const skill = skills.find((candidate) => candidate.name === input.name);
      if (!skill) {
        const names = skills.map((candidate) => candidate.name).join(', ') || 'none';
        return error(`Error: no skill named ${JSON.stringify(input.name)}. Available: ${names}`);
      }
      return {
        content: [{ type: 'text', text: `# Skill ${skill.name}\nFolder: ${skill.dir}\n\n${skill.markdown}` }],
        isError: false,
        metadata: { dir: skill.dir },
      };
    },
  };
}

function error(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
