import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, startHttpServer } from './helpers.js';

// A third-party MCP client from npm against `ws serve`: the MCP Inspector's command-line mode
// (@modelcontextprotocol/inspector-cli 1.0.3, `mcp-inspector-cli --cli`). It runs on Node 20 and
// downloads nothing; the full @modelcontextprotocol/inspector wants Node ≥ 22.7.5 (its 2.x ≥ 22.19)
// and brings a web UI. Its CLI reads its own package.json from `../package.json` if that exists
// relative to the working directory, else from `../../package.json` next to its script (the full
// package's layout): run from its own build folder, the first is its own package.json.

const manifest = createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/package.json');
const bin = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> }).bin[
  'mcp-inspector-cli'
] as string;
const INSPECTOR = join(dirname(manifest), bin);

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `mcp-inspector-cli --cli <args…>` to completion (asynchronously: an HTTP server may be in this process's tree). */
function inspector(args: readonly string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [INSPECTOR, '--cli', ...args], {
      cwd: dirname(INSPECTOR),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON the inspector prints for one method; fails the test with its stderr otherwise. */
async function call<T>(args: readonly string[]): Promise<T> {
  const outcome = await inspector(args);
  expect(outcome.code, outcome.stderr).toBe(0);
  return JSON.parse(outcome.stdout) as T;
}

interface ListedTools {
  tools: {
    name: string;
    inputSchema: { properties?: Record<string, unknown> };
    annotations?: { readOnlyHint?: boolean };
  }[];
}

interface CalledTool {
  content: { type: string; text?: string }[];
  isError?: boolean;
}

const text = (result: CalledTool) => result.content.map((item) => item.text ?? '').join('\n');

beforeAll(assertBuilt);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-inspector-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('the MCP Inspector CLI (npm) against ws serve --backend local', () => {
  it('over stdio: lists the tools and calls Bash, Write, Read, Glob and Grep (Edit needs a Read in its process)', async () => {
    const workdir = join(scratch, 'stdio');
    // The server's command comes first: the inspector passes its own launcher's arguments on
    // without a `--`, and its variadic --tool-arg takes every word after it.
    const server = [process.execPath, BIN, 'serve', '--backend', 'local', '--workdir', workdir];
    const listed = await call<ListedTools>([...server, '--method', 'tools/list']);
    const names = listed.tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep']));
    expect(listed.tools.find((tool) => tool.name === 'Bash')?.inputSchema.properties).toHaveProperty(
      'command',
    );
    expect(listed.tools.find((tool) => tool.name === 'Read')?.annotations?.readOnlyHint).toBe(true);

    const tool = (name: string, ...pairs: string[]) =>
      call<CalledTool>([
        ...server,
        '--method',
        'tools/call',
        '--tool-name',
        name,
        ...pairs.flatMap((pair) => ['--tool-arg', pair]),
      ]);
    const file = join(workdir, 'notes', 'inspected.txt');
    const bash = await tool('Bash', 'command=echo "from the inspector"; pwd');
    expect(bash.isError).toBeFalsy();
    expect(text(bash)).toBe(`from the inspector\n${workdir}\n`);
    expect((await tool('Write', `file_path=${file}`, 'content=alpha line')).isError).toBeFalsy();
    expect(await readFile(file, 'utf8')).toBe('alpha line');
    expect(text(await tool('Read', `file_path=${file}`))).toContain('alpha line');
    // Each call here is a server process of its own, and Edit needs a Read of the file in the same
    // server (the HTTP case below edits): refused, the file unchanged.
    const edited = await tool('Edit', `file_path=${file}`, 'old_string=alpha', 'new_string=omega');
    expect(edited.isError).toBe(true);
    expect(text(edited)).toMatch(/read it/);
    expect(await readFile(file, 'utf8')).toBe('alpha line');
    expect(text(await tool('Glob', 'pattern=**/*.txt'))).toContain('inspected.txt');
    expect(text(await tool('Grep', 'pattern=alpha', 'output_mode=content'))).toContain('alpha line');
    const failed = await tool('Bash', 'command=echo no >&2; exit 7');
    expect(failed.isError).toBe(true);
  }, 120_000);

  it('over streamable HTTP with a bearer token: lists, then Write, Bash, Read, Edit, Grep; a wrong token is refused', async () => {
    const workdir = join(scratch, 'http');
    const server = await startHttpServer(['--backend', 'local', '--workdir', workdir]);
    try {
      const target = [server.url, '--transport', 'http'];
      const auth = ['--header', `Authorization: Bearer ${server.token}`];
      const listed = await call<ListedTools>([...target, ...auth, '--method', 'tools/list']);
      expect(listed.tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep']),
      );
      // Over HTTP the server process stays: Write, then Read and Edit, in one workspace.
      const file = join(workdir, 'over-http.txt');
      const args = (name: string, ...pairs: string[]) => [
        ...target,
        ...auth,
        '--method',
        'tools/call',
        '--tool-name',
        name,
        ...pairs.flatMap((pair) => ['--tool-arg', pair]),
      ];
      expect(
        (await call<CalledTool>(args('Write', `file_path=${file}`, 'content=one two'))).isError,
      ).toBeFalsy();
      expect(text(await call<CalledTool>(args('Bash', 'command=cat over-http.txt')))).toBe('one two');
      expect(text(await call<CalledTool>(args('Read', `file_path=${file}`)))).toContain('one two');
      const edited = await call<CalledTool>(
        args('Edit', `file_path=${file}`, 'old_string=two', 'new_string=three'),
      );
      expect(edited.isError, text(edited)).toBeFalsy();
      expect(await readFile(file, 'utf8')).toBe('one three');
      expect(text(await call<CalledTool>(args('Grep', 'pattern=three', 'output_mode=content')))).toContain(
        'one three',
      );

      const refused = await inspector([
        ...target,
        '--header',
        'Authorization: Bearer nope',
        '--method',
        'tools/list',
      ]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/Unauthorized/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 120_000);
});
