import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, runWs } from './helpers.js';

beforeAll(assertBuilt);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-demo-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

interface Summary {
  backend: string;
  workspaceId: string;
  workdir: string;
  kept: boolean;
  skill: { name: string; dir: string };
  mcpServer: { name: string; command: string[] };
  tools: string[];
  calls: { tool: string; input: Record<string, unknown>; isError: boolean; ms: number; output: string }[];
  offload: { context: string; data: string[] };
  files: string[];
}

const TOOLS = ['Bash', 'Write', 'Read', 'Edit', 'Glob', 'Grep', 'mcp__text__word_count', 'Skill'];

describe('ws demo', () => {
  it('--json: every tool called through the toolset, nothing failed, the temporary folder gone', () => {
    const result = runWs(['demo', '--json']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
    const summary = JSON.parse(result.stdout) as Summary;
    expect(summary).toMatchObject({ backend: 'local', workspaceId: 'demo', kept: false });
    expect([...summary.tools].sort()).toEqual([...TOOLS].sort());
    expect(summary.calls.map((call) => call.tool)).toEqual(TOOLS);
    for (const call of summary.calls) expect(call.isError, `${call.tool}: ${call.output}`).toBe(false);
    const output = Object.fromEntries(summary.calls.map((call) => [call.tool, call.output]));
    expect(output.Bash).toMatch(/^Linux /);
    expect(output.Grep).toContain('tried every tool');
    expect(output.mcp__text__word_count).toBe('10 words, 3 lines');
    expect(output.Skill).toContain('# Release notes');
    expect(summary.mcpServer).toEqual({
      name: 'text',
      command: [process.execPath, join(summary.workdir, 'tools', 'text-server.mjs')],
    });
    expect(summary.skill).toEqual({
      name: 'release-notes',
      dir: join(summary.workdir, 'skills', 'default', 'release-notes'),
    });
    expect(summary.offload.context).toBe(join(summary.workdir, 'sessions', 'demo', 'context.jsonl'));
    expect(summary.files).toEqual(
      expect.arrayContaining([
        '.mcp',
        'notes/plan.md',
        'sessions/demo/context.jsonl',
        'skills/default/release-notes/SKILL.md',
        'tools/text-server.mjs',
      ]),
    );
    expect(summary.files.filter((file) => /^data\/[0-9a-f]{64}\.png$/.test(file))).toHaveLength(1);
    // Deleted at the end: the command waited for the workspace to close before it exited.
    expect(existsSync(summary.workdir)).toBe(false);
  });

  it('--workdir: the tour, and every file where it says; a second run in the same folder works too', async () => {
    const workdir = join(scratch, 'tour');
    const result = runWs(['demo', '--workdir', workdir]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    for (const tool of TOOLS) expect(result.stdout).toMatch(new RegExp(`^  ${tool} .*→`, 'm'));
    expect(result.stdout).not.toMatch(/ERROR/);
    expect(result.stdout).toContain(`Where everything landed, under ${workdir}:`);
    expect(result.stdout).toContain(`The workspace's files stay in ${workdir}.`);

    expect(await readFile(join(workdir, 'notes', 'plan.md'), 'utf8')).toBe(
      '# Plan\n- tried every tool\n- offload the context\n',
    );
    expect(await readFile(join(workdir, 'skills', 'default', 'release-notes', 'SKILL.md'), 'utf8')).toMatch(
      /^---\nname: release-notes\n/,
    );
    expect(JSON.parse(await readFile(join(workdir, '.mcp'), 'utf8'))).toBeTypeOf('object');
    expect(await readFile(join(workdir, '.mcp'), 'utf8')).toContain('text-server.mjs');
    // The image left the context for data/, named by the SHA-256 of its base64 text (AgentScope's
    // naming); the context points at it.
    const lines = (await readFile(join(workdir, 'sessions', 'demo', 'context.jsonl'), 'utf8'))
      .trimEnd()
      .split('\n');
    expect(lines).toHaveLength(2);
    const url = /workspace:\/\/\/data\/([0-9a-f]{64})\.png/.exec(lines[0] ?? '');
    expect(url).not.toBeNull();
    const image = await readFile(join(workdir, 'data', `${url?.[1]}.png`));
    expect(createHash('sha256').update(image.toString('base64')).digest('hex')).toBe(url?.[1]);
    expect(image.subarray(1, 4).toString()).toBe('PNG');
    expect(lines[0]).not.toContain('base64');

    const again = runWs(['demo', '--workdir', workdir, '--json']);
    expect(again.status, again.stderr).toBe(0);
    const summary = JSON.parse(again.stdout) as Summary;
    expect(summary.kept).toBe(true);
    expect(summary.calls.filter((call) => call.isError)).toEqual([]);
    expect((await readFile(summary.offload.context, 'utf8')).trimEnd().split('\n')).toHaveLength(4);
  });

  it('--keep keeps the temporary folder and says where', async () => {
    const result = runWs(['demo', '--keep']);
    expect(result.status, result.stderr).toBe(0);
    const kept = /The workspace's files are kept in (\S+)\./.exec(result.stdout)?.[1];
    expect(kept).toBeDefined();
    try {
      expect(existsSync(join(kept as string, 'notes', 'plan.md'))).toBe(true);
    } finally {
      await rm(kept as string, { recursive: true, force: true });
    }
  });
});
