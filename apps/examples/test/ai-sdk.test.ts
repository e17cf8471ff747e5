import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadModelMessages } from '@ws/ai-sdk';
import { requireEngine } from '@ws/contract-tests';
import type { ToolResult } from '@ws/core';
import { LocalWorkspace } from '@ws/local';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module, the example as users run it.
import { pickAiSdkModel, runAiSdkAgent, scriptedAiSdkModel } from '../src/ai-sdk.mjs';

const base = mkdtempSync(join(tmpdir(), 'ws-example-ai-sdk-'));
const workspace = new LocalWorkspace({ hostWorkdir: join(base, 'work') });
const here = dirname(fileURLToPath(import.meta.url));

beforeAll(() => workspace.initialize());
afterAll(async () => {
  await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

interface RecordedResult {
  toolCallId: string;
  toolName: string;
  output: ToolResult;
}
interface Prompt {
  role: string;
  content: Array<{ type: string; toolCallId?: string; output?: { type: string; value: unknown } }>;
}

const text = (result: ToolResult) =>
  result.content.map((item) => (item.type === 'text' ? item.text : '')).join('');

describe('the AI SDK example (scripted MockLanguageModelV3, LocalWorkspace)', () => {
  it('writes, reads, edits, greps and runs a script through generateText, and sees a failing command as an error', async () => {
    const model = scriptedAiSdkModel(workspace.workdir);
    const result = await runAiSdkAgent({ workspace, model, sessionId: 'ai-sdk-example' });

    // Seven model calls: six tool calls, one per step, then the answer.
    expect(model.doGenerateCalls).toHaveLength(7);
    const results: RecordedResult[] = result.steps.flatMap(
      (step: { toolResults: RecordedResult[] }) => step.toolResults,
    );
    expect(results.map((part) => part.toolName)).toEqual(['Write', 'Read', 'Edit', 'Grep', 'Bash', 'Bash']);
    const [write, read, edit, grep, run, failed] = results.map((part) => part.output);

    // The files are real: the workspace holds the edited script.
    const script = join(workspace.workdir, 'hello.sh');
    expect(readFileSync(script, 'utf8')).toBe('#!/bin/sh\necho "Hello from the AI SDK"\n');
    expect(write!.isError).toBe(false);
    expect(text(read!)).toContain('echo "Hello from the workspace"');
    expect(edit!.metadata?.diff).toMatch(/-echo "Hello from the workspace"\n\+echo "Hello from the AI SDK"/);
    expect(text(grep!)).toContain('hello.sh:2:echo "Hello from the AI SDK"');
    expect(run).toMatchObject({ isError: false, metadata: { exitCode: 0 } });
    expect(text(run!).trim()).toBe('Hello from the AI SDK');
    expect(failed!.isError).toBe(true);
    expect(failed!.metadata?.exitCode).not.toBe(0);
    expect(text(failed!)).toMatch(/missing\.sh/);

    // What the model was sent: text for successes, error-text for the failed command.
    const lastPrompt = model.doGenerateCalls[6]!.prompt as Prompt[];
    const outputs = lastPrompt
      .filter((message) => message.role === 'tool')
      .flatMap((message) => message.content)
      .map((part) => part.output);
    expect(outputs.map((output) => output?.type)).toEqual([
      'text',
      'text',
      'text',
      'text',
      'text',
      'error-text',
    ]);
    expect(result.text).toContain('The script printed: Hello from the AI SDK');
    expect(result.text).toMatch(/The last command failed \(error-text\): Command failed: sh missing\.sh/);

    // The conversation was offloaded and reads back whole.
    const restored = await loadModelMessages(workspace, 'ai-sdk-example');
    expect(restored).toHaveLength(1 + result.response.messages.length);
    expect(restored[0]).toMatchObject({ role: 'user' });
  });

  it('picks the scripted model when no API key is set', async () => {
    const saved = { gateway: process.env.AI_GATEWAY_API_KEY, openai: process.env.OPENAI_API_KEY };
    delete process.env.AI_GATEWAY_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const picked = await pickAiSdkModel(workspace.workdir);
      expect(picked.name).toContain('scripted');
    } finally {
      if (saved.gateway !== undefined) process.env.AI_GATEWAY_API_KEY = saved.gateway;
      if (saved.openai !== undefined) process.env.OPENAI_API_KEY = saved.openai;
    }
  });

  it.skipIf(!process.env.AI_GATEWAY_API_KEY && !process.env.OPENAI_API_KEY)(
    'does the same task with a real model when its API key is set',
    async () => {
      const { model } = await pickAiSdkModel(workspace.workdir);
      rmSync(join(workspace.workdir, 'hello.sh'), { force: true });
      const result = await runAiSdkAgent({ workspace, model, maxSteps: 20 });
      expect(result.steps.length).toBeGreaterThan(1);
      expect(existsSync(join(workspace.workdir, 'hello.sh'))).toBe(true);
    },
    180_000,
  );

  // The built packages, as `node apps/examples/src/ai-sdk.mjs` runs them after `npm run setup`.
  const unbuilt = existsSync(join(here, '../../../packages/ai-sdk/dist/index.js'))
    ? undefined
    : requireEngine('build', 'packages/ai-sdk is not built (npm run setup)');
  if (unbuilt) console.warn(`[ai-sdk example] script run skipped: ${unbuilt}`);
  it.skipIf(unbuilt !== undefined)('runs as a script, prints the steps and exits by itself', async () => {
    const env = { ...process.env };
    delete env.AI_GATEWAY_API_KEY;
    delete env.OPENAI_API_KEY;
    const { stdout } = await promisify(execFile)(process.execPath, [join(here, '../src/ai-sdk.mjs')], {
      env,
      timeout: 60_000,
    });
    expect(stdout).toContain('→ Write');
    expect(stdout).toContain('← ok: Hello from the AI SDK');
    expect(stdout).toMatch(/← error: Command failed: sh missing\.sh/);
    const folder = /Workspace: (\S+)/.exec(stdout)?.[1];
    if (folder?.includes('ws-ai-sdk-example-')) rmSync(folder, { recursive: true, force: true });
  });
});
