import { type CompleteSandbox, isWsError, type Tool } from '@ws/core';
import { shellQuote } from '@ws/core/backend';
import { expect } from 'vitest';
import { errorText, okText, toolNamed } from '../fixtures.js';
import { conformanceCase, expectWsError, HOSTILE_NAMES } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

// What the huge-output case prints: more than the 100 MiB of host memory it allows, twice over (a
// Bash that held its output would hold it as text). The sandbox's side truncates it on most backends.
const BASH_OUTPUT_BYTES = 256 * 1024 * 1024;

/** The tool list, schemas and input checks, and the Bash tool. */
export function toolsBashArea(context: AreaContext): void {
  describe('tools', { decidedBy: 'engine' }, () => {
    let workspace: WorkspaceUnderTest;
    let sandbox: CompleteSandbox;
    let bash: Tool;

    beforeAll(async () => {
      workspace = await context.create();
      await workspace.initialize();
      sandbox = workspace.getSandbox();
      bash = await toolNamed(workspace, 'Bash');
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await workspace?.close();
    }, context.caseTimeoutMs);

    conformanceCase(
      context,
      'tools.list',
      'lists Bash, Edit, Glob, Grep, Read and Write with schemas and annotations',
      async () => {
        const tools = await workspace.listTools();
        expect(tools.map((tool) => tool.name)).toEqual(['Bash', 'Edit', 'Glob', 'Grep', 'Read', 'Write']);
        const readOnly = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations.readOnlyHint]));
        expect(readOnly).toEqual({
          Bash: false,
          Edit: false,
          Glob: true,
          Grep: true,
          Read: true,
          Write: false,
        });
        const concurrent = Object.fromEntries(
          tools.map((tool) => [tool.name, tool.annotations.concurrencySafe]),
        );
        expect(concurrent).toEqual({
          Bash: false,
          Edit: false,
          Glob: true,
          Grep: true,
          Read: true,
          Write: false,
        });
        for (const tool of tools) {
          expect(tool.description.length, tool.name).toBeGreaterThan(40);
          expect(tool.inputSchema.type, tool.name).toBe('object');
          expect(Array.isArray(tool.inputSchema.required), tool.name).toBe(true);
        }
        const required = Object.fromEntries(tools.map((tool) => [tool.name, tool.inputSchema.required]));
        expect(required).toEqual({
          Bash: ['command'],
          Edit: ['file_path', 'old_string', 'new_string'],
          Glob: ['pattern'],
          Grep: ['pattern'],
          Read: ['file_path'],
          Write: ['file_path', 'content'],
        });
      },
    );

    conformanceCase(
      context,
      'tools.schema-limits',
      'publishes the defaults and limits in the schemas',
      async () => {
        const tools = Object.fromEntries(
          (await workspace.listTools()).map((tool) => [
            tool.name,
            tool.inputSchema.properties as Record<string, Record<string, unknown>>,
          ]),
        );
        expect(tools.Bash?.timeout).toMatchObject({
          type: 'integer',
          default: 120_000,
          minimum: 0,
          maximum: 600_000,
        });
        expect(tools.Read?.limit).toMatchObject({
          type: 'integer',
          default: 2_000,
          minimum: 1,
          maximum: 2_000,
        });
        expect(tools.Read?.offset).toMatchObject({ type: 'integer', default: 1, minimum: 1 });
        expect(tools.Read?.pages).toMatchObject({ type: 'string' });
        expect(tools.Edit?.replace_all).toMatchObject({ type: 'boolean', default: false });
        expect(tools.Grep?.output_mode).toMatchObject({
          enum: ['content', 'files_with_matches', 'count'],
          default: 'files_with_matches',
        });
        for (const flag of ['-A', '-B', '-C', 'context', 'head_limit', 'offset'])
          expect(tools.Grep?.[flag], flag).toMatchObject({ type: 'integer', minimum: 0 });
        expect(tools.Grep?.['-n']).toMatchObject({ type: 'boolean', default: true });
        expect(tools.Grep?.['-i']).toMatchObject({ type: 'boolean', default: false });
        expect(tools.Grep?.multiline).toMatchObject({ type: 'boolean', default: false });
        expect(Object.keys(tools.Glob ?? {}).sort()).toEqual(['path', 'pattern']);
      },
    );

    conformanceCase(
      context,
      'tools.invalid-input',
      'answers malformed input with an error result, not an exception',
      async () => {
        const byName = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
        expect(errorText(await byName.Bash!.call({}))).toMatch(/missing required parameter `command`/);
        expect(errorText(await byName.Bash!.call({ command: 'true', timeout: 600_001 }))).toMatch(
          /`timeout` must be at most 600000/,
        );
        expect(errorText(await byName.Bash!.call({ command: 'true', timeout: 1.5 }))).toMatch(
          /`timeout` must be an integer/,
        );
        expect(errorText(await byName.Read!.call({ file_path: '/x', limit: 2_001 }))).toMatch(
          /`limit` must be at most 2000/,
        );
        expect(errorText(await byName.Read!.call({ file_path: '/x', offset: 0 }))).toMatch(
          /`offset` must be at least 1/,
        );
        expect(errorText(await byName.Grep!.call({ pattern: 'x', output_mode: 'lines' }))).toMatch(
          /`output_mode` must be one of/,
        );
        expect(errorText(await byName.Grep!.call({ pattern: 'x', head_limit: -1 }))).toMatch(
          /`head_limit` must be at least 0/,
        );
        expect(errorText(await byName.Grep!.call({ pattern: 'x', offset: -2 }))).toMatch(
          /`offset` must be at least 0/,
        );
        expect(errorText(await byName.Write!.call({ file_path: '/x', content: 7 }))).toMatch(
          /`content` must be a string/,
        );
        expect(errorText(await byName.Edit!.call({ file_path: '/x', old_string: 'a' }))).toMatch(
          /missing required parameter `new_string`/,
        );
        expect(errorText(await byName.Glob!.call(null as never))).toMatch(/must be a JSON object/);
      },
    );

    conformanceCase(
      context,
      'tools.abort',
      'kills a running Bash call on abort and throws ABORTED',
      async () => {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 200);
        const started = Date.now();
        await expectWsError(
          () => bash.call({ command: 'sleep 30' }, { signal: controller.signal }),
          'ABORTED',
        );
        expect(Date.now() - started).toBeLessThan(25_000);
      },
      { decidedBy: 'backend' },
    );

    conformanceCase(context, 'bash.output', 'runs in the workdir and returns stdout', async () => {
      expect(okText(await bash.call({ command: 'echo hello' }))).toBe('hello\n');
      expect(okText(await bash.call({ command: 'pwd' })).trim()).toBe(workspace.workdir);
      expect(okText(await bash.call({ command: 'true' }))).toBe('');
    });

    conformanceCase(
      context,
      'bash.fresh-shell',
      'starts every call in a fresh shell in the workdir',
      async () => {
        okText(await bash.call({ command: 'cd / && export WS_STATE=1' }));
        // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
        expect(okText(await bash.call({ command: 'pwd; echo "${WS_STATE-unset}"' }))).toBe(
          `${workspace.workdir}\nunset\n`,
        );
      },
    );

    conformanceCase(
      context,
      'bash.stderr-after-stdout',
      'returns stdout, a newline, then stderr',
      async () => {
        const result = await bash.call({ command: 'echo out; echo err >&2' });
        expect(okText(result)).toBe('out\n\nerr\n');
        expect(result.metadata).toMatchObject({ exitCode: 0, timedOut: false });
      },
    );

    conformanceCase(
      context,
      'bash.failure',
      'reports a failing command with its stdout and stderr',
      async () => {
        const command = 'echo o; echo e >&2; exit 3';
        const result = await bash.call({ command });
        expect(errorText(result)).toBe(`Command failed: ${command}\n\nStdout:\no\n\nStderr:\ne\n`);
        expect(result.metadata).toMatchObject({ exitCode: 3 });
        const missing = await bash.call({ command: 'ws-no-such-command-x' });
        expect(errorText(missing)).toMatch(/^Command failed: ws-no-such-command-x\n/);
        expect(missing.metadata).toMatchObject({ exitCode: 127 });
      },
    );

    conformanceCase(context, 'bash.timeout', 'kills a command at its timeout and says so', async () => {
      const started = Date.now();
      const result = await bash.call({ command: 'sleep 20', timeout: 300 });
      expect(errorText(result)).toBe('Command timed out after 300ms: sleep 20');
      expect(result.metadata).toMatchObject({ timedOut: true });
      expect(Date.now() - started).toBeLessThan(15_000);
    });

    conformanceCase(context, 'bash.crlf', 'turns CRLF and lone CR into LF', async () => {
      expect(okText(await bash.call({ command: "printf 'a\\r\\nb\\rc\\n'" }))).toBe('a\nb\nc\n');
    });

    conformanceCase(
      context,
      'bash.truncation',
      'cuts output at 30 000 characters with the truncation suffix',
      async () => {
        const text = okText(await bash.call({ command: "head -c 50000 /dev/zero | tr '\\0' a" }));
        expect(text).toBe(`${'a'.repeat(30_000)}\n... (output truncated)`);
        const failing = errorText(
          await bash.call({ command: "head -c 50000 /dev/zero | tr '\\0' b; exit 1" }),
        );
        expect(failing.length).toBe(30_000 + '\n... (output truncated)'.length);
        expect(failing.startsWith('Command failed: ')).toBe(true);
      },
    );

    conformanceCase(
      context,
      'bash.huge-output',
      'returns truncated text for a command printing gigabytes, with host memory flat',
      async () => {
        const before = process.memoryUsage().rss;
        let peak = before;
        const sampler = setInterval(() => {
          peak = Math.max(peak, process.memoryUsage().rss);
        }, 20);
        let result: Awaited<ReturnType<Tool['call']>>;
        try {
          result = await bash.call({
            command: `head -c ${BASH_OUTPUT_BYTES} /dev/zero | tr '\\0' x`,
            timeout: 600_000,
          });
        } finally {
          clearInterval(sampler);
        }
        const text = okText(result);
        expect(text).toBe(`${'x'.repeat(30_000)}\n... (output truncated)`);
        expect(result.metadata).toMatchObject({ truncated: true, exitCode: 0 });
        expect(peak - before).toBeLessThan(100 * 1024 * 1024);
      },
      { timeoutMs: 600_000, decidedBy: 'backend' },
    );

    conformanceCase(
      context,
      'bash.hostile-names',
      'works on files with hostile names through quoted arguments',
      async () => {
        await sandbox.mkdir('bash-hostile', { recursive: true });
        for (const name of HOSTILE_NAMES) {
          await sandbox.writeFile(`bash-hostile/${name}`, `body of ${name}`);
          const text = okText(await bash.call({ command: `cat -- ${shellQuote(`bash-hostile/${name}`)}` }));
          expect(text).toBe(`body of ${name}`);
        }
      },
    );

    conformanceCase(
      context,
      'tools.disposed',
      'throws DISPOSED from a tool of a closed workspace',
      async () => {
        const other = await context.create();
        await other.initialize();
        const tool = await toolNamed(other, 'Bash');
        await other.close();
        let caught: unknown;
        try {
          await tool.call({ command: 'true' });
        } catch (error) {
          caught = error;
        }
        expect(isWsError(caught, 'DISPOSED'), String(caught)).toBe(true);
        await expectWsError(() => other.listTools(), 'DISPOSED');
      },
    );

    conformanceCase(
      context,
      'tools.not-ready',
      'refuses listTools before initialize with NOT_READY',
      async () => {
        const other = await context.create();
        await expectWsError(() => other.listTools(), 'NOT_READY');
        await other.close();
      },
    );
  });
}
