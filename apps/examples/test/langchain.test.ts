import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { Command, MemorySaver } from '@langchain/langgraph';
import { requireEngine } from '@ws/contract-tests';
import { generateId, type Workspace } from '@ws/core';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '@ws/docker';
import { langChainTools, loadMessages } from '@ws/langchain';
import { LocalWorkspace } from '@ws/local';
import { createAgent, humanInTheLoopMiddleware } from 'langchain';
import { afterAll, describe, expect, it } from 'vitest';

/** What apps/examples/src/langchain.mjs exports (plain JavaScript, so typed here). */
interface LangChainExample {
  TASK: string;
  runLangChainAgent(options: {
    workspace: Workspace;
    model: BaseChatModel;
    prompt?: string;
    agentId?: string;
    sessionId?: string;
    signal?: AbortSignal;
    log?: (line: string) => void;
  }): Promise<{ messages: BaseMessage[]; answer: string; contextPath: string }>;
  scriptedModel(workdir: string): ReturnType<typeof fakeModel>;
}
// A variable specifier: the example is JavaScript without a declaration file.
const examplePath = '../src/langchain.mjs';
const example = (await import(examplePath)) as LangChainExample;

const dockerSkip = requireEngine('docker', await dockerProblem(DEFAULT_DOCKER_IMAGE));
if (dockerSkip) console.log(`LangChain example on Docker skipped: ${dockerSkip}`);

const base = mkdtempSync(join(tmpdir(), 'ws-example-langchain-'));
const owner = `ws-test-${generateId().slice(0, 8)}`;
afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
  rmSync(base, { recursive: true, force: true });
}, 120_000);

/** Runs the example's loop with its scripted model and checks every step against the files. */
async function runScripted(workspace: Workspace, hostWorkdir: string): Promise<void> {
  const lines: string[] = [];
  const model = example.scriptedModel(workspace.workdir);
  const { messages, answer, contextPath } = await example.runLangChainAgent({
    workspace,
    model,
    log: (line) => lines.push(line),
  });

  // The loop went through the real framework: seven model turns, six tool calls answered in order.
  expect(model.callCount).toBe(7);
  const toolMessages = messages.filter((message): message is ToolMessage => ToolMessage.isInstance(message));
  expect(toolMessages.map((message) => message.name)).toEqual([
    'Write',
    'Read',
    'Edit',
    'Grep',
    'Bash',
    'Bash',
  ]);
  const calls = messages.flatMap((message) =>
    AIMessage.isInstance(message) ? (message.tool_calls ?? []) : [],
  );
  expect(toolMessages.map((message) => message.tool_call_id)).toEqual(calls.map((call) => call.id));

  const [write, read, edit, grep, run, fail] = toolMessages;
  expect(write?.status).toBe('success');
  expect(read?.status).toBe('success');
  expect(read?.text).toContain('echo "Hello, world"');
  expect(edit?.status).toBe('success');
  expect(readFileSync(join(hostWorkdir, 'greet.sh'), 'utf8')).toBe('#!/bin/sh\necho "Hello, workspace"\n');
  expect(grep?.status).toBe('success');
  expect(grep?.text).toContain('greet.sh');
  expect(grep?.text).toContain('Hello, workspace');
  expect(run?.status).toBe('success');
  expect(run?.text).toBe('Hello, workspace\n');
  expect(fail?.status).toBe('error');
  expect(fail?.text).toContain('Command failed: sh missing.sh');

  // The model saw the failure as an error on its last turn, and said so.
  const lastInput = model.calls.at(-1)?.messages.at(-1);
  expect(ToolMessage.isInstance(lastInput) && lastInput.status).toBe('error');
  expect(answer).toContain('failed (status: error)');
  expect(answer).toContain('missing.sh');
  expect(lines.some((line) => line.startsWith('← Bash error: Command failed'))).toBe(true);

  // The conversation was offloaded and reads back as the same messages.
  expect(contextPath.endsWith('sessions/langchain-example/context.jsonl')).toBe(true);
  const back = await loadMessages(workspace, 'langchain-example');
  expect(back.map((message) => message.type)).toEqual(messages.map((message) => message.type));
  expect(back.map((message) => message.text)).toEqual(messages.map((message) => message.text));
  expect((back.at(-2) as ToolMessage).status).toBe('error');
}

describe('LangChain example', () => {
  it('runs the multi-step loop on a LocalWorkspace with LangChain’s offline model', async () => {
    const hostWorkdir = join(base, 'local');
    const workspace = new LocalWorkspace({ hostWorkdir });
    await workspace.initialize();
    try {
      await runScripted(workspace, hostWorkdir);
    } finally {
      await workspace.close();
    }
  });

  it.skipIf(Boolean(dockerSkip))('runs the same loop on a DockerWorkspace', async () => {
    const hostWorkdir = join(base, 'docker');
    const workspace = new DockerWorkspace({ hostWorkdir, owner });
    await workspace.initialize();
    try {
      await runScripted(workspace, hostWorkdir);
    } finally {
      await workspace.close();
    }
  });

  it('pauses destructive calls for approval with humanInTheLoopMiddleware and the interruptOn it is given', async () => {
    const hostWorkdir = join(base, 'approval');
    const workspace = new LocalWorkspace({ hostWorkdir });
    await workspace.initialize();
    try {
      const { tools, instructions, interruptOn } = await langChainTools(workspace, { agentId: 'careful' });
      const target = join(workspace.workdir, 'approved.txt');
      const model = fakeModel()
        .respondWithTools([
          { name: 'Glob', args: { pattern: '*' }, id: 'look' },
          { name: 'Write', args: { file_path: target, content: 'approved\n' }, id: 'write' },
        ])
        .respond(new AIMessage('Done.'));
      const checkpointer = new MemorySaver();
      const agent = createAgent({
        model,
        tools,
        systemPrompt: instructions,
        middleware: [humanInTheLoopMiddleware({ interruptOn })],
        checkpointer,
      });
      const config = { configurable: { thread_id: 'approval' } };
      const paused = await agent.invoke({ messages: [{ role: 'user', content: 'write the file' }] }, config);
      // Write waits for a decision; Glob (read-only) is not asked about.
      const interrupt = (paused as { __interrupt__?: { value: { actionRequests: { name: string }[] } }[] })
        .__interrupt__?.[0];
      expect(interrupt?.value.actionRequests.map((request) => request.name)).toEqual(['Write']);
      expect(() => readFileSync(join(hostWorkdir, 'approved.txt'))).toThrow();

      const resumed = await agent.invoke(
        new Command({ resume: { decisions: [{ type: 'approve' }] } }),
        config,
      );
      expect(readFileSync(join(hostWorkdir, 'approved.txt'), 'utf8')).toBe('approved\n');
      expect(resumed.messages.at(-1)?.text).toBe('Done.');
    } finally {
      await workspace.close();
    }
  });
});
