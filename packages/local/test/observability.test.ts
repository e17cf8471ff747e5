import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Tool, WorkspaceEvent } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalWorkspace } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-observe-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function named(tools: readonly Tool[], name: string): Tool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool;
}

describe('onEvent', () => {
  it("hears a workspace's life: opened, each tool call with its command and bytes, closed", async () => {
    const events: WorkspaceEvent[] = [];
    const workspace = await LocalWorkspace.open({
      hostWorkdir: join(base, 'life'),
      workspaceId: 'observed',
      onEvent: (event) => events.push(event),
    });
    const opened = events.find((event) => event.type === 'workspace.opened');
    expect(opened).toMatchObject({ workspaceId: 'observed', backend: 'local', level: 'info' });
    const tools = await workspace.listTools();
    const secret = 'the-argument-is-not-reported';
    const ok = await named(tools, 'Bash').call({ command: `echo ${secret}` }, { toolCallId: 'call_1' });
    expect(ok.isError).toBe(false);
    const failed = await named(tools, 'Bash').call({ command: 'exit 3' }, { toolCallId: 'call_2' });
    expect(failed.isError).toBe(true);
    const wrote = await named(tools, 'Write').call({
      file_path: `${workspace.workdir}/notes.txt`,
      content: 'héllo',
    });
    expect(wrote.isError).toBe(false);
    await workspace.close();

    const life = events.map((event) => event.type);
    expect(life[0]).toBe('workspace.opened');
    expect(life.at(-1)).toBe('workspace.closed');
    const calls = events.filter((event) => event.type === 'tool.ended');
    expect(calls.map((event) => [event.tool, event.toolCallId, event.isError])).toEqual([
      ['Bash', 'call_1', false],
      ['Bash', 'call_2', true],
      ['Write', undefined, false],
    ]);
    // Each Bash call's command sits between its tool's start and end, with its exit code.
    const first = life.indexOf('tool.started');
    const ended = events.filter((event) => event.type === 'command.ended');
    expect(ended.map((event) => event.exitCode)).toContain(0);
    expect(ended.map((event) => event.exitCode)).toContain(3);
    expect(life.indexOf('command.started', first)).toBeLessThan(life.indexOf('tool.ended', first));
    const echoed = ended.find((event) => event.exitCode === 0 && event.stdoutBytes > 0);
    expect(echoed?.stdoutBytes).toBe(secret.length + 1);
    // Only the program is named: arguments may hold secrets.
    expect(JSON.stringify(events)).not.toContain(secret);
    const written = events.find((event) => event.type === 'file.written' && event.path.endsWith('notes.txt'));
    expect(written).toMatchObject({ bytes: Buffer.byteLength('héllo') });
    for (const event of events) {
      expect(typeof event.time).toBe('number');
      expect(event.message.length).toBeGreaterThan(0);
    }
  });

  it('reports a failed opening, and a listener that throws is a process warning, never a failure', async () => {
    const events: WorkspaceEvent[] = [];
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const workspace = await LocalWorkspace.open({
        hostWorkdir: join(base, 'throwing'),
        onEvent: (event) => {
          events.push(event);
          throw new Error('listener broke');
        },
      });
      const result = await workspace.getSandbox().exec(['true']);
      expect(result.exitCode).toBe(0);
      await workspace.close();
      await new Promise((resolve) => setImmediate(resolve));
      expect(events.map((event) => event.type)).toContain('command.ended');
      expect(warnings).toContain('WorkspaceEventListenerError');
    } finally {
      process.off('warning', onWarning);
    }
    // A workdir that cannot be made: the opening fails, and says so.
    const failures: WorkspaceEvent[] = [];
    const blocked = new LocalWorkspace({
      hostWorkdir: '/proc/self/no-such-place/work',
      onEvent: (event) => failures.push(event),
    });
    await expect(blocked.initialize()).rejects.toThrow();
    expect(failures.map((event) => event.type)).toEqual(['workspace.open_failed']);
  });
});

describe('OpenTelemetry', () => {
  it('records one span per tool call, with its attributes, and the commands it ran inside it', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    trace.setGlobalTracerProvider(provider);
    try {
      const workspace = await LocalWorkspace.open({
        hostWorkdir: join(base, 'traced'),
        workspaceId: 'traced',
      });
      const tools = await workspace.listTools();
      exporter.reset();
      await named(tools, 'Bash').call({ command: 'echo traced' }, { toolCallId: 'call_a' });
      await named(tools, 'Bash').call({ command: 'exit 4' }, { toolCallId: 'call_b' });
      await named(tools, 'Read').call({ file_path: 'missing.txt' });
      await workspace.close();
      const spans = exporter.getFinishedSpans();
      const toolSpans = spans.filter((span) => span.name.startsWith('execute_tool '));
      expect(toolSpans.map((span) => span.name)).toEqual([
        'execute_tool Bash',
        'execute_tool Bash',
        'execute_tool Read',
      ]);
      const [ok, failed, missing] = toolSpans as [ReadableSpan, ReadableSpan, ReadableSpan];
      expect(ok.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'Bash',
        'gen_ai.tool.call.id': 'call_a',
        'ws.workspace.id': 'traced',
        'ws.backend': 'local',
        'ws.tool.is_error': false,
      });
      expect(ok.status.code).toBe(0); // unset
      expect(failed.attributes['ws.tool.is_error']).toBe(true);
      expect(failed.status.code).toBe(2); // error
      expect(missing.attributes['gen_ai.tool.call.id']).toBeUndefined();
      // The command of the first call is a child of its tool span.
      const commands = spans.filter(
        (span) => span.name.startsWith('exec ') && span.parentSpanContext?.spanId === ok.spanContext().spanId,
      );
      expect(commands.length).toBeGreaterThan(0);
      expect(commands[0]?.attributes['process.exit.code']).toBe(0);
    } finally {
      trace.disable();
      context.disable();
      contextManager.disable();
    }
  });
});

const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

function runWithDebug(debug: string | undefined): Promise<{ code: number | null; stderr: string }> {
  const script = `
    import { LocalWorkspace } from ${JSON.stringify(built)};
    const workspace = await LocalWorkspace.open({ hostWorkdir: ${JSON.stringify(join(base, 'debug'))} });
    await workspace.getSandbox().exec(['sh', '-c', 'exit 5']);
    await workspace.close();
  `;
  const env = { ...process.env };
  delete env.DEBUG;
  if (debug !== undefined) env.DEBUG = debug;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

describe('DEBUG=ws:*', () => {
  it("prints a workspace's life to stderr, by namespace, and nothing without it", async () => {
    const all = await runWithDebug('ws:*');
    expect(all.code).toBe(0);
    expect(all.stderr).toMatch(/ws:workspace \[local [0-9a-f]{8}\] opened in \d+ ms/);
    expect(all.stderr).toMatch(/ws:command \[local [0-9a-f]{8}\] sh exit 5 in \d+ ms/);
    expect(all.stderr).toMatch(/ws:workspace \[local [0-9a-f]{8}\] closed in \d+ ms/);
    const some = await runWithDebug('ws:*,-ws:command');
    expect(some.stderr).toContain('ws:workspace');
    expect(some.stderr).not.toContain('ws:command');
    const none = await runWithDebug(undefined);
    expect(none).toEqual({ code: 0, stderr: '' });
  });
});
