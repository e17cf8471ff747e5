import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stdioSpec, uploadMcpFixtures } from '@ws/contract-tests';
import { SKILL_TOOL_NAME, type Tool, type ToolResult, workspaceToolset } from '@ws/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalWorkspace } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-toolset-'));
const workspace = new LocalWorkspace({ hostWorkdir: join(base, 'work') });

function text(result: ToolResult): string {
  return result.content.map((item) => (item.type === 'text' ? item.text : '')).join('');
}

function named(tools: readonly Tool[], name: string): Tool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(', ')}`);
  return tool;
}

beforeAll(async () => {
  await workspace.initialize();
  await uploadMcpFixtures(workspace.getSandbox(), workspace.getSandbox().workdir);
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

describe('workspaceToolset', () => {
  it('holds only the built-ins and the plain instructions for an agent with no skills or MCP servers', async () => {
    const toolset = await workspaceToolset(workspace, { agentId: 'bare' });
    expect(toolset.tools.map((tool) => tool.name).sort()).toEqual([
      'Bash',
      'Edit',
      'Glob',
      'Grep',
      'Read',
      'Write',
    ]);
    expect(toolset.instructions).toBe(workspace.getInstructions());
    expect(toolset.skills).toEqual([]);
  });

  it("adds the scope's MCP tools and a Skill tool whose listing reaches the instructions", async () => {
    const skillDir = join(base, 'release-notes');
    mkdirSync(skillDir, { recursive: true });
    writeFileSync(
      join(skillDir, 'SKILL.md'),
      '---\nname: release-notes\ndescription: Writes release notes\n  from the git log.\n---\nRun `git log` and summarise.\n',
    );
    await workspace.addSkill(skillDir, { agentId: 'writer' });
    await workspace.addMcp(stdioSpec('helper'), { agentId: 'writer', sessionId: 's1' });

    const toolset = await workspaceToolset(workspace, { agentId: 'writer', sessionId: 's1' });
    const names = toolset.tools.map((tool) => tool.name);
    expect(names).toContain('mcp__helper__echo');
    expect(names.at(-1)).toBe(SKILL_TOOL_NAME);
    expect(toolset.instructions.startsWith(workspace.getInstructions())).toBe(true);
    expect(toolset.instructions).toContain('- release-notes: Writes release notes from the git log. (');

    const echo = await named(toolset.tools, 'mcp__helper__echo').call({ text: 'hi' });
    expect(echo.isError).toBe(false);
    expect(text(echo)).toContain('hi');

    const skill = named(toolset.tools, SKILL_TOOL_NAME);
    expect(skill.annotations.readOnlyHint).toBe(true);
    const shown = await skill.call({ name: 'release-notes' });
    expect(shown.isError).toBe(false);
    expect(text(shown)).toContain('Run `git log` and summarise.');
    expect(text(shown)).toContain(toolset.skills[0]?.dir ?? 'missing');

    const unknown = await skill.call({ name: 'nope' });
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toContain('Available: release-notes');
    expect((await skill.call({})).isError).toBe(true);

    // Another session of the same agent does not see the session's server; mcp: false drops them all.
    const other = await workspaceToolset(workspace, { agentId: 'writer', sessionId: 's2' });
    expect(other.tools.some((tool) => tool.name.startsWith('mcp__helper__'))).toBe(false);
    const noMcp = await workspaceToolset(workspace, {
      agentId: 'writer',
      sessionId: 's1',
      mcp: false,
      skills: false,
    });
    expect(noMcp.tools.map((tool) => tool.name)).not.toContain('mcp__helper__echo');
    expect(noMcp.tools.map((tool) => tool.name)).not.toContain(SKILL_TOOL_NAME);
  });

  it('rejects with ABORTED when the signal has fired', async () => {
    await expect(workspaceToolset(workspace, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'ABORTED',
    });
  });
});
