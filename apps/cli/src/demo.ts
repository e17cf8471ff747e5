import type { Dirent } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { isWsError, SKILL_TOOL_NAME, type ToolResult, workspaceToolset } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { prepareHostDir } from './backends.js';
import { settleWithin } from './deadline.js';
import { DEMO_PNG_BASE64, DEMO_SKILL, demoMcpServer } from './demo-assets.js';

export interface DemoOptions {
  /** A host folder to use and keep; default a temporary one, deleted at the end unless `keep`. */
  readonly workdir?: string | undefined;
  readonly keep: boolean;
  /** Print one JSON summary instead of the tour. */
  readonly json: boolean;
  /** The whole tour's time limit, in ms. */
  readonly timeoutMs: number;
}

/** One tool call of the tour, as the summary reports it. */
interface CallRecord {
  readonly tool: string;
  readonly input: Record<string, unknown>;
  readonly isError: boolean;
  readonly ms: number;
  readonly output: string;
}

const MCP_SERVER = 'text';
const MCP_TOOL = `mcp__${MCP_SERVER}__word_count`;
const SESSION = 'demo';
/** What each file of the layout is, for the "where everything landed" list. */
const WHAT: readonly [RegExp, string][] = [
  [/^\.mcp$/, 'the MCP servers, per agent and session'],
  [/^notes\//, 'written by Write, changed by Edit'],
  [/^tools\//, "the demo's MCP server, run with node"],
  [/^skills\/\.seed\//, 'skill template (seeded copies come from here)'],
  [/^skills\/default\//, "the skill, in the default agent's partition"],
  [/^sessions\/[^/]+\/context\.jsonl$/, 'offloaded context, one message a line'],
  [/^data\//, 'the image, stored once under a hash of its content'],
];

/** The MCP SDK's ES module files, by URL, for the demo's server script. */
function sdkUrls(): { server: string; stdio: string; types: string } {
  return {
    server: import.meta.resolve('@modelcontextprotocol/sdk/server/index.js'),
    stdio: import.meta.resolve('@modelcontextprotocol/sdk/server/stdio.js'),
    types: import.meta.resolve('@modelcontextprotocol/sdk/types.js'),
  };
}

const textOf = (result: ToolResult): string =>
  result.content.map((item) => (item.type === 'text' ? item.text : `[${item.type}]`)).join('\n');

/** The first line of a text, cut to `width` characters. */
function headline(text: string, width = 60): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/**
 * The quick-start tour on the local backend: opens a workspace, installs a skill, adds an MCP server,
 * calls every tool an agent gets (through `workspaceToolset`), offloads context with an image and
 * shows where each thing landed. Prints the tour, or one JSON summary with `json`.
 */
export async function runDemo(options: DemoOptions, signal: AbortSignal): Promise<number> {
  const started = performance.now();
  const temporary = options.workdir === undefined;
  const workdir = temporary
    ? await mkdtemp(join(tmpdir(), 'ws-demo-'))
    : await prepareHostDir(options.workdir as string);
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]);
  const call = { signal: deadline };
  const out = (line = '') => {
    if (!options.json) process.stdout.write(`${line}\n`);
  };
  const skillSource = await mkdtemp(join(tmpdir(), 'ws-demo-skill-'));
  const workspace = new LocalWorkspace({ hostWorkdir: workdir, workspaceId: 'demo' });
  const calls: CallRecord[] = [];
  const kept = !temporary || options.keep;
  try {
    await workspace.initialize(call);
    out(`ws demo: a ${workspace.capabilities.backend} workspace "${workspace.id}" in ${workspace.workdir}\n`);
    const sandbox = workspace.getSandbox();
    const at = (path: string) => relative(workspace.workdir, path) || '.';

    await mkdir(join(skillSource, DEMO_SKILL.dir));
    await writeFile(join(skillSource, DEMO_SKILL.dir, 'SKILL.md'), DEMO_SKILL.markdown);
    // A workdir given again (--workdir) already has the tour's skill and server: replace them.
    await workspace.removeSkill(DEMO_SKILL.name, call).catch((error: unknown) => {
      if (!isWsError(error) || error.code !== 'NOT_FOUND') throw error;
    });
    await workspace.removeMcp(MCP_SERVER, call);
    const skill = await workspace.addSkill(join(skillSource, DEMO_SKILL.dir), call);
    out(`  installed the skill "${skill.name}"   ${at(skill.dir)}/SKILL.md`);

    const serverPath = join(workspace.workdir, 'tools', 'text-server.mjs');
    await sandbox.writeFile(serverPath, demoMcpServer(sdkUrls()), call);
    await workspace.addMcp(
      { name: MCP_SERVER, transport: { type: 'stdio', command: process.execPath, args: [serverPath] } },
      call,
    );
    out(`  added the MCP server "${MCP_SERVER}" (stdio: node ${at(serverPath)})   .mcp`);

    const toolset = await workspaceToolset(workspace, { signal: deadline });
    out(`  the agent's tools: ${toolset.tools.map((tool) => tool.name).join(' ')}\n`);

    const plan = join(workspace.workdir, 'notes', 'plan.md');
    await rm(plan, { force: true }); // from an earlier tour in the same --workdir: Write makes it anew
    const steps: [string, Record<string, unknown>][] = [
      ['Bash', { command: 'uname -sm', timeout: 10_000 }],
      ['Write', { file_path: plan, content: '# Plan\n- try every tool\n- offload the context\n' }],
      ['Read', { file_path: plan }],
      ['Edit', { file_path: plan, old_string: 'try every tool', new_string: 'tried every tool' }],
      ['Glob', { pattern: '**/*.md' }],
      ['Grep', { pattern: 'tried', output_mode: 'content' }],
      [MCP_TOOL, { text: '# Plan\n- tried every tool\n- offload the context\n' }],
      [SKILL_TOOL_NAME, { name: skill.name }],
    ];
    for (const [name, input] of steps) {
      const tool = toolset.tools.find((candidate) => candidate.name === name);
      if (!tool) throw new Error(`the workspace's toolset has no ${name} tool`);
      const t0 = performance.now();
      const result = await tool.call(input, call);
      const ms = performance.now() - t0;
      const output = textOf(result);
      calls.push({ tool: name, input, isError: result.isError === true, ms: Math.round(ms), output });
      const shown = name === 'Write' || name === 'Edit' || name === 'Read' ? at(plan) : describeInput(input);
      const said = headline(lastLine(name, output).replaceAll(`${workspace.workdir}/`, ''));
      out(
        `  ${name.padEnd(22)} ${shown.padEnd(26)} ${result.isError ? 'ERROR ' : '→ '}${said}  (${ms.toFixed(0)} ms)`,
      );
    }

    const contextPath = await workspace.offloadContext(
      SESSION,
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            {
              type: 'data',
              name: 'pixel.png',
              source: { type: 'base64', media_type: 'image/png', data: DEMO_PNG_BASE64 },
            },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'A single white pixel.' }] },
      ],
      call,
    );
    const files = await listFiles(workspace.workdir);
    const images = files.filter((file) => file.startsWith('data/'));
    out(
      `  ${'offloadContext'.padEnd(22)} ${'2 messages, 1 PNG'.padEnd(26)} → ${at(contextPath)}, ${images.map(shortHash).join(', ')}`,
    );

    out(`\nWhere everything landed, under ${workspace.workdir}:`);
    const width = Math.max(...files.map((file) => shortHash(file).length));
    for (const file of files) {
      const what = WHAT.find(([pattern]) => pattern.test(file))?.[1] ?? '';
      out(`  ${shortHash(file).padEnd(width)}  ${what}`.trimEnd());
    }
    const failed = calls.filter((record) => record.isError);
    const elapsedMs = Math.round(performance.now() - started);
    if (options.json) {
      process.stdout.write(
        `${JSON.stringify({
          backend: workspace.capabilities.backend,
          workspaceId: workspace.id,
          workdir: workspace.workdir,
          kept,
          skill: { name: skill.name, dir: skill.dir },
          mcpServer: { name: MCP_SERVER, command: [process.execPath, serverPath] },
          tools: toolset.tools.map((tool) => tool.name),
          calls,
          offload: { context: contextPath, data: images.map((file) => join(workspace.workdir, file)) },
          files,
          ms: elapsedMs,
        })}\n`,
      );
    } else {
      out(
        `\nDone in ${elapsedMs} ms${failed.length ? `; ${failed.length} call(s) failed: ${failed.map((record) => record.tool).join(', ')}` : ''}.`,
      );
    }
    return failed.length > 0 ? 1 : 0;
  } catch (error) {
    if (deadline.aborted && !signal.aborted)
      throw new Error(`ws demo: the tour did not finish within ${options.timeoutMs / 1000}s`);
    throw error;
  } finally {
    // Bounded, and keeping the process alive until it is done (see settleWithin).
    await settleWithin(workspace.close(), 3_000);
    await rm(skillSource, { recursive: true, force: true });
    if (!kept) await rm(workdir, { recursive: true, force: true });
    else if (temporary) out(`The workspace's files are kept in ${workdir}.`);
    else out(`The workspace's files stay in ${workdir}.`);
    if (!kept) out('The temporary folder was deleted (--keep or --workdir keeps it).');
  }
}

/** `data/<64 hex>.png` as `data/e427046b….png`, for the eye (the JSON summary has whole names). */
function shortHash(path: string): string {
  return path.replace(/([0-9a-f]{8})[0-9a-f]{56}/, '$1…');
}

/** A short form of a tool's input for the tour. */
function describeInput(input: Record<string, unknown>): string {
  const value = input.command ?? input.pattern ?? input.name ?? input.text;
  return headline(typeof value === 'string' ? value.replace(/\n/g, ' ') : JSON.stringify(input), 26);
}

/** Read's output starts with line numbers; the tour shows its last line, the others their first. */
function lastLine(tool: string, output: string): string {
  if (tool !== 'Read') return output;
  const lines = output.trim().split('\n');
  return `${lines.length} lines, ending "${(lines.at(-1) ?? '').replace(/^\s*\d+\s*[→\t]/, '').trim()}"`;
}

/** Every file under `root`, relative and sorted, folders first by path. */
async function listFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (folder: string) => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => [] as Dirent[]);
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else found.push(relative(root, path));
    }
  };
  await walk(root);
  return found.sort();
}
