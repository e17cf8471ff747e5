import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolMessage } from '@langchain/core/messages';
import { type DynamicStructuredTool, ToolInputParsingException } from '@langchain/core/tools';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { stdioSpec, uploadMcpFixtures } from '@ws/contract-tests';
import type { ToolResult } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { langChainTools, toLangChainTool, type WorkspaceToolMetadata } from '../src/index.js';

// A 1×1 PNG.
const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const base = mkdtempSync(join(tmpdir(), 'ws-langchain-tools-'));
const hostWorkdir = join(base, 'work');
const workspace = new LocalWorkspace({ hostWorkdir });
let callNumber = 0;

function named(tools: readonly DynamicStructuredTool[], name: string): DynamicStructuredTool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(', ')}`);
  return tool;
}

/** Invokes a tool the way an agent's tool node does: with a tool call. */
async function callTool(
  tool: DynamicStructuredTool,
  args: Record<string, unknown>,
  config: { signal?: AbortSignal } = {},
): Promise<ToolMessage> {
  const id = `call_${++callNumber}`;
  const output: unknown = await tool.invoke({ type: 'tool_call', id, name: tool.name, args }, config);
  if (!ToolMessage.isInstance(output))
    throw new Error(`expected a ToolMessage, got ${JSON.stringify(output)}`);
  expect(output.tool_call_id).toBe(id);
  expect(output.name).toBe(tool.name);
  return output;
}

beforeAll(async () => {
  await workspace.initialize();
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

describe('langChainTools', () => {
  it('turns the built-ins into LangChain tools with the plain instructions and approval rules for the destructive ones', async () => {
    const { tools, instructions, skills, interruptOn } = await langChainTools(workspace, { agentId: 'bare' });
    expect(tools.map((tool) => tool.name).sort()).toEqual(['Bash', 'Edit', 'Glob', 'Grep', 'Read', 'Write']);
    expect(instructions).toBe(workspace.getInstructions());
    expect(skills).toEqual([]);
    expect(Object.keys(interruptOn).sort()).toEqual(['Bash', 'Edit', 'Write']);
    expect(interruptOn.Bash).toEqual({
      allowedDecisions: ['approve', 'edit', 'reject'],
      description: 'Run a shell command',
    });
    const read = named(tools, 'Read').metadata as WorkspaceToolMetadata;
    expect(read.destructive).toBe(false);
    expect(read.annotations.readOnlyHint).toBe(true);
    expect((named(tools, 'Bash').metadata as WorkspaceToolMetadata).destructive).toBe(true);
    // The schema is the tool's own JSON Schema, handed to providers as it is.
    const listed = await workspace.listTools({ agentId: 'bare' });
    const bash = listed.find((tool) => tool.name === 'Bash');
    expect(convertToOpenAITool(named(tools, 'Bash')).function.parameters).toEqual(bash?.inputSchema);
  });

  it('returns a ToolMessage with the text, a success status and the ToolResult as the artifact', async () => {
    const { tools } = await langChainTools(workspace);
    const path = join(workspace.workdir, 'notes.txt');
    const written = await callTool(named(tools, 'Write'), { file_path: path, content: 'alpha\nbeta\n' });
    expect(written.status).toBe('success');
    expect(typeof written.content).toBe('string');
    expect(readFileSync(join(hostWorkdir, 'notes.txt'), 'utf8')).toBe('alpha\nbeta\n');
    const artifact = written.artifact as ToolResult;
    expect(artifact.isError).toBe(false);
    expect(artifact.content[0]).toEqual({ type: 'text', text: written.content });

    const read = await callTool(named(tools, 'Read'), { file_path: path });
    expect(read.status).toBe('success');
    expect(read.content).toContain('beta');
  });

  it('marks a failed command as an error the model sees, with its output kept', async () => {
    const { tools } = await langChainTools(workspace);
    const failed = await callTool(named(tools, 'Bash'), { command: 'echo partial; echo broken >&2; exit 3' });
    expect(failed.status).toBe('error');
    expect(failed.content).toContain('Command failed');
    expect(failed.content).toContain('partial');
    expect(failed.content).toContain('broken');
    expect((failed.artifact as ToolResult).isError).toBe(true);
    expect((failed.artifact as ToolResult).metadata?.exitCode).toBe(3);

    const missing = await callTool(named(tools, 'Read'), { file_path: join(workspace.workdir, 'nope.txt') });
    expect(missing.status).toBe('error');
    expect(missing.content).toContain('does not exist');
  });

  it('sends an image as a standard image block with its bytes', async () => {
    writeFileSync(join(hostWorkdir, 'dot.png'), Buffer.from(PNG_BASE64, 'base64'));
    const { tools } = await langChainTools(workspace);
    const read = await callTool(named(tools, 'Read'), { file_path: join(workspace.workdir, 'dot.png') });
    expect(read.status).toBe('success');
    expect(read.content).toEqual([{ type: 'image', data: PNG_BASE64, mimeType: 'image/png' }]);
    // LangChain's own view of the blocks (what provider converters read) sees an image.
    expect(read.contentBlocks).toEqual([{ type: 'image', data: PNG_BASE64, mimeType: 'image/png' }]);
  });

  it('returns the content alone when invoked with plain arguments', async () => {
    const { tools } = await langChainTools(workspace);
    const output: unknown = await named(tools, 'Bash').invoke({ command: 'echo plain' });
    expect(output).toBe('plain\n');
  });

  it("refuses input that does not match the schema with LangChain's parsing error, naming the problem", async () => {
    const { tools } = await langChainTools(workspace);
    const error = await named(tools, 'Bash')
      .invoke({ type: 'tool_call', id: 'bad', name: 'Bash', args: { cmd: 'ls' } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolInputParsingException);
    expect((error as Error).message).toContain('command');
  });

  it("carries the config's signal into the call, so aborting kills the command", async () => {
    const { tools } = await langChainTools(workspace);
    const marker = join(hostWorkdir, 'aborted-marker');
    const controller = new AbortController();
    const started = Date.now();
    const call = callTool(
      named(tools, 'Bash'),
      { command: `sleep 1.5 && touch ${marker}` },
      {
        signal: controller.signal,
      },
    );
    setTimeout(() => controller.abort(), 200);
    await expect(call).rejects.toMatchObject({ code: 'ABORTED' });
    expect(Date.now() - started).toBeLessThan(1_400);
    await new Promise((resolve) => setTimeout(resolve, 1_800));
    expect(existsSync(marker)).toBe(false);
  });

  it("includes the scope's MCP tools and the Skill tool, with the skill listing in the instructions", async () => {
    await uploadMcpFixtures(workspace.getSandbox(), workspace.getSandbox().workdir);
    const skillDir = join(base, 'greeting');
    mkdirSync(skillDir, { recursive: true });
    writeFileSync(
      join(skillDir, 'SKILL.md'),
      '---\nname: greeting\ndescription: Greets people politely.\n---\nSay hello by name.\n',
    );
    await workspace.addSkill(skillDir, { agentId: 'helper' });
    await workspace.addMcp(stdioSpec('helper'), { agentId: 'helper', sessionId: 's1' });

    const { tools, instructions, interruptOn } = await langChainTools(workspace, {
      agentId: 'helper',
      sessionId: 's1',
    });
    const names = tools.map((tool) => tool.name);
    expect(names).toContain('mcp__helper__echo');
    expect(names.at(-1)).toBe('Skill');
    expect(instructions).toContain('- greeting: Greets people politely.');
    expect(interruptOn.Skill).toBeUndefined();

    const echo = await callTool(named(tools, 'mcp__helper__echo'), { text: 'over mcp' });
    expect(echo.status).toBe('success');
    expect(JSON.stringify(echo.content)).toContain('over mcp');
    const skill = await callTool(named(tools, 'Skill'), { name: 'greeting' });
    expect(skill.content).toContain('Say hello by name.');
  });
});

describe('strict schemas', () => {
  it('requires every property, makes optional ones nullable and drops the nulls before the call', async () => {
    const { tools } = await langChainTools(workspace, { strict: true });
    for (const tool of tools) {
      const parameters = convertToOpenAITool(tool, { strict: true }).function.parameters as Record<
        string,
        unknown
      >;
      expect(parameters).toBe(tool.schema);
      assertStrict(parameters, tool.name);
    }
    const bash = named(tools, 'Bash');
    const schema = bash.schema as { properties: Record<string, { type: unknown }> };
    expect(schema.properties.timeout?.type).toEqual(['integer', 'null']);

    const message = await callTool(bash, { command: 'echo strict', description: null, timeout: null });
    expect(message.status).toBe('success');
    expect(message.content).toBe('strict\n');
  });

  it('leaves the plain schema refusing the nulls strict mode sends', async () => {
    const { tools } = await langChainTools(workspace);
    await expect(
      named(tools, 'Bash').invoke({
        type: 'tool_call',
        id: 'nulls',
        name: 'Bash',
        args: { command: 'echo x', timeout: null },
      }),
    ).rejects.toBeInstanceOf(ToolInputParsingException);
  });

  it('keeps a null the original schema allows, and strips nested optional nulls', async () => {
    let received: unknown;
    const tool = toLangChainTool(
      {
        name: 'Probe',
        description: 'Records its input.',
        inputSchema: {
          type: 'object',
          properties: {
            note: { type: ['string', 'null'] },
            mode: { type: 'string', enum: ['a', 'b'] },
            nested: {
              type: 'object',
              properties: { depth: { type: 'integer', default: 1 }, label: { type: 'string' } },
              required: ['label'],
            },
          },
          required: ['note'],
        },
        annotations: { readOnlyHint: true, concurrencySafe: true },
        async call(input) {
          received = input;
          return { content: [{ type: 'text', text: 'ok' }], isError: false };
        },
      },
      { strict: true },
    );
    assertStrict(tool.schema as Record<string, unknown>, 'Probe');
    const properties = (tool.schema as { properties: Record<string, Record<string, unknown>> }).properties;
    expect(properties.mode).toEqual({ type: ['string', 'null'], enum: ['a', 'b', null] });
    await callTool(tool, { note: null, mode: null, nested: { depth: null, label: 'x' } });
    expect(received).toEqual({ note: null, nested: { label: 'x' } });
  });
});

/** The rules of OpenAI's strict mode that the rewrite is for, checked on every object schema. */
function assertStrict(schema: unknown, where: string): void {
  if (Array.isArray(schema)) {
    for (const item of schema) assertStrict(item, where);
    return;
  }
  if (typeof schema !== 'object' || schema === null) return;
  const node = schema as Record<string, unknown>;
  expect(node, where).not.toHaveProperty('default');
  if (node.type === 'object') {
    const properties = (node.properties ?? {}) as Record<string, unknown>;
    expect(node.additionalProperties, where).toBe(false);
    expect([...(node.required as string[])].sort(), where).toEqual(Object.keys(properties).sort());
  }
  for (const value of Object.values(node)) assertStrict(value, where);
}
