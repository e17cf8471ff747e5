import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { setTracingDisabled } from '@openai/agents';
import { langChainTools } from '@ws/langchain';
import { LocalWorkspace } from '@ws/local';
import { createAgent } from 'langchain';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain ES modules, the examples as users run them.
import { buildLogAsSent as aiSdkBuildLog, runAiSdkOffload } from '../src/ai-sdk-offload.mjs';
// @ts-expect-error: plain ES modules, the examples as users run them.
import { buildLog } from '../src/build-log-server.mjs';
// @ts-expect-error: plain ES modules, the examples as users run them.
import { buildLogAsSent as langChainBuildLog, runLangChainOffload } from '../src/langchain-offload.mjs';
// @ts-expect-error: plain ES modules, the examples as users run them.
import { OFFLOAD_SETTINGS } from '../src/offload-script.mjs';
// @ts-expect-error: plain ES modules, the examples as users run them.
import { runOpenAiAgentsOffload } from '../src/openai-agents-offload.mjs';

setTracingDisabled(true);
const base = mkdtempSync(join(tmpdir(), 'ws-example-offload-'));
const workspaces: LocalWorkspace[] = [];
afterAll(async () => {
  for (const workspace of workspaces) await workspace.close();
  rmSync(base, { recursive: true, force: true });
});

async function freshWorkspace(name: string): Promise<LocalWorkspace> {
  const workspace = new LocalWorkspace({ hostWorkdir: join(base, name) });
  workspaces.push(workspace);
  await workspace.initialize();
  return workspace;
}

const LOG: string = buildLog();
const ERROR_LINE = /line 073421 ERROR linker: undefined symbol/;

/** What every framework's run must show: the preview, the whole file, the parked context, the answer. */
function expectParked(workspace: LocalWorkspace, shown: string, firstAnswer: string, secondAnswer: string) {
  expect(LOG).toHaveLength(5_000_000);
  // The model got the head, the tail and the path, not the 5 MB.
  expect(shown.length).toBeLessThan(OFFLOAD_SETTINGS.previewChars + 600);
  expect(shown.startsWith('line 000000 ')).toBe(true);
  expect(shown).toContain('line 099999 ');
  expect(shown).not.toMatch(ERROR_LINE);
  const file = /The whole result is in '([^']+)'/.exec(shown)?.[1] ?? '';
  expect(file).toBe(join(workspace.workdir, 'sessions/offload-demo/tool_result-call-5.txt'));
  // The file holds all of it; the agent found the error there.
  expect(readFileSync(file, 'utf8')).toBe(LOG);
  expect(firstAnswer).toMatch(ERROR_LINE);
  // The oldest turns were parked, once each, and the second task was answered from them.
  const lines = readFileSync(join(workspace.workdir, 'sessions/offload-demo/context.jsonl'), 'utf8')
    .trim()
    .split('\n');
  expect(lines.length).toBeGreaterThanOrEqual(4);
  expect(new Set(lines).size).toBe(lines.length);
  expect(lines[0]).toContain('Run the four checks');
  expect(secondAnswer).toMatch(/^From the offloaded conversation: line 073421 ERROR/);
}

describe('the offloading examples (scripted models, LocalWorkspace, a 5 MB MCP tool output)', () => {
  it('AI SDK: prepareStep parks the context, toModelOutput parks the 5 MB result', async () => {
    const workspace = await freshWorkspace('ai-sdk');
    const { first, second, model } = await runAiSdkOffload({ workspace });
    expectParked(workspace, aiSdkBuildLog(model), first.text, second.text);
    for (const call of model.doGenerateCalls as { prompt: unknown }[])
      expect(JSON.stringify(call.prompt).length).toBeLessThan(OFFLOAD_SETTINGS.contextBudgetChars + 4_000);
  });

  it('OpenAI Agents SDK: callModelInputFilter parks the context, the tools park the 5 MB result', async () => {
    const workspace = await freshWorkspace('openai-agents');
    const { first, second, model } = await runOpenAiAgentsOffload({ workspace });
    const inputs = (model.calls as { request: { input: unknown } }[]).map((call) =>
      JSON.stringify(call.request.input),
    );
    const shownItem = (first.history as { type: string; output?: unknown }[]).find(
      (item) =>
        item.type === 'function_call_result' &&
        JSON.stringify(item.output).includes('The whole result is in'),
    );
    const output = shownItem?.output as string | { text: string };
    expectParked(
      workspace,
      typeof output === 'string' ? output : output.text,
      first.finalOutput,
      second.finalOutput,
    );
    for (const input of inputs)
      expect(input.length).toBeLessThan(OFFLOAD_SETTINGS.contextBudgetChars + 4_000);
  });

  it('LangChain: createAgent with the offload middleware parks the context in its state', async () => {
    const workspace = await freshWorkspace('langchain');
    const { first, second, model } = await runLangChainOffload({ workspace });
    const calls = (model.calls as { messages: ToolMessage[] }[]).map((call) => call.messages);
    expectParked(
      workspace,
      langChainBuildLog(calls),
      String(first.messages.at(-1).content),
      String(second.messages.at(-1).content),
    );
    // The state itself lost the parked messages: it starts with the note.
    expect(String(second.messages[0].content)).toContain('is offloaded to');
  });

  it('LangChain: the middleware type-checks as a createAgent middleware', async () => {
    const workspace = await freshWorkspace('langchain-types');
    const { tools, offloadMiddleware } = await langChainTools(workspace, { offload: true });
    if (!offloadMiddleware) throw new Error('offload is on: the middleware must be there');
    const agent = createAgent({ model: fakeModel(), tools, middleware: [offloadMiddleware] });
    expect(agent).toBeDefined();
  });
});
