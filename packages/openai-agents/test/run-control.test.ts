import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, type RunToolApprovalItem, run } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents/testing';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAiAgentTools, toOpenAiAgentTool } from '../src/index.js';
import { outputsByCall, outputText, recordingTool } from './helpers.js';

const base = mkdtempSync(join(tmpdir(), 'ws-openai-agents-run-'));
const host = join(base, 'work');
const workspace = new LocalWorkspace({ hostWorkdir: host });
let workdir = '';

beforeAll(async () => {
  await workspace.initialize();
  workdir = workspace.getSandbox().workdir;
});
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('a run of the SDK over workspace tools', () => {
  it("hands the run's abort signal to the tool, and aborting kills the command it runs", async () => {
    const { tools } = await openAiAgentTools(workspace);
    const pidFile = join(host, 'sleeper.pid');
    const model = new ScriptedModel([
      [
        functionCall(
          'Bash',
          { command: `echo $$ > ${join(workdir, 'sleeper.pid')}; exec sleep 30` },
          { callId: 'b' },
        ),
      ],
      [assistantMessage('never reached')],
    ]);
    const controller = new AbortController();
    const started = Date.now();
    const running = run(new Agent({ name: 'sleeper', tools, model }), 'go', { signal: controller.signal });
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') {
      if (Date.now() - started > 20_000) throw new Error('the command never started');
      await sleep(50);
    }
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(pid)).toBe(true);
    controller.abort();
    const failure = await running.then(
      () => undefined,
      (error: unknown) => error,
    );
    // The run ends as any aborted run of the SDK does: rejected with the signal's reason.
    expect(failure).toBe(controller.signal.reason);
    // The process group gets SIGTERM, then SIGKILL after 2 s.
    const deadline = Date.now() + 5_000;
    while (alive(pid) && Date.now() < deadline) await sleep(50);
    expect(alive(pid)).toBe(false);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('passes a signal to every call', async () => {
    const probe = recordingTool('Probe', { type: 'object', properties: {}, required: [] });
    const model = new ScriptedModel([[functionCall('Probe', {}, { callId: 'p' })], [assistantMessage('ok')]]);
    const controller = new AbortController();
    await run(new Agent({ name: 'probe', tools: [toOpenAiAgentTool(probe)], model }), 'go', {
      signal: controller.signal,
    });
    expect(probe.signals[0]).toBeInstanceOf(AbortSignal);
    expect(probe.signals[0]?.aborted).toBe(false);
  });

  it('asks for approval of destructive tools only when told to, and honours the answer', async () => {
    const loose = await openAiAgentTools(workspace);
    const guarded = await openAiAgentTools(workspace, { needsApproval: true });
    const needs = async (tools: typeof loose.tools, name: string) =>
      tools.find((tool) => tool.name === name)!.needsApproval(undefined as never, {}, 'id');
    for (const name of ['Bash', 'Write', 'Edit', 'Read', 'Glob', 'Grep'])
      expect(await needs(loose.tools, name)).toBe(false);
    for (const name of ['Bash', 'Write', 'Edit']) expect(await needs(guarded.tools, name)).toBe(true);
    for (const name of ['Read', 'Glob', 'Grep']) expect(await needs(guarded.tools, name)).toBe(false);
    const onlyBash = await openAiAgentTools(workspace, { needsApproval: (tool) => tool.name === 'Bash' });
    expect(await needs(onlyBash.tools, 'Bash')).toBe(true);
    expect(await needs(onlyBash.tools, 'Write')).toBe(false);

    const approved = join(workdir, 'approved.txt');
    const rejected = join(workdir, 'rejected.txt');
    const model = new ScriptedModel([
      [functionCall('Write', { file_path: approved, content: 'yes\n' }, { callId: 'w1' })],
      [functionCall('Write', { file_path: rejected, content: 'no\n' }, { callId: 'w2' })],
      [assistantMessage('finished')],
    ]);
    const agent = new Agent({ name: 'careful', tools: guarded.tools, model });
    let result = await run(agent, 'go');
    const ask = (expected: string): RunToolApprovalItem => {
      expect(result.interruptions.map((item) => item.name)).toEqual([expected]);
      return result.interruptions[0]!;
    };
    expect(existsSync(join(host, 'approved.txt'))).toBe(false);
    result.state.approve(ask('Write'));
    result = await run(agent, result.state);
    expect(readFileSync(join(host, 'approved.txt'), 'utf8')).toBe('yes\n');
    result.state.reject(ask('Write'));
    result = await run(agent, result.state);
    expect(result.finalOutput).toBe('finished');
    expect(existsSync(join(host, 'rejected.txt'))).toBe(false);
    expect(outputText(outputsByCall(result.history).get('w2'))).toMatch(/not approved/);
  });

  it('fails the run, rather than telling the model, when the workspace is closed', async () => {
    const other = new LocalWorkspace({ hostWorkdir: join(base, 'closed') });
    await other.initialize();
    const { tools } = await openAiAgentTools(other);
    const file = join(other.getSandbox().workdir, 'x.txt');
    await other.close();
    const model = new ScriptedModel([
      [functionCall('Read', { file_path: file }, { callId: 'r' })],
      [assistantMessage('should not get here')],
    ]);
    // The SDK wraps what a tool throws in its ToolCallError; the workspace's error is inside.
    await expect(run(new Agent({ name: 'late', tools, model }), 'go')).rejects.toMatchObject({
      name: 'ToolCallError',
      error: { code: 'DISPOSED' },
    });
  });
});
