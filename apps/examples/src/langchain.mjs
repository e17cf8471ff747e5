// A LangChain.js agent (langchain v1 `createAgent`) working in a @ws workspace.
//
//   node apps/examples/src/langchain.mjs      (after `npm run setup` has built the packages)
//
// With OPENAI_API_KEY or ANTHROPIC_API_KEY set and the provider package installed (`@langchain/openai`,
// `@langchain/anthropic`), a real model does the task; otherwise LangChain's own offline test model
// (`fakeModel()` from `@langchain/core/testing`) plays a scripted run of the same task.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { langChainTools, offloadMessages } from '@ws/langchain';
import { LocalWorkspace } from '@ws/local';
import { createAgent, initChatModel } from 'langchain';

/** The task every example agent is given. */
export const TASK =
  'Create greet.sh in the workspace that prints "Hello, world", read it back, change "world" to ' +
  '"workspace", grep the workspace for "Hello", run the script with sh, then run `sh missing.sh` ' +
  'and tell me what happened.';

/**
 * Runs one agent loop over a workspace: the workspace's tools and instructions (one call), a
 * `createAgent` loop, the steps printed as they happen, and the conversation offloaded to the
 * workspace at the end.
 * @param {object} options
 * @param {import('@ws/core').Workspace} options.workspace an initialized workspace
 * @param {import('@langchain/core/language_models/chat_models').BaseChatModel} options.model
 * @param {string} [options.prompt] the user's request (default {@link TASK})
 * @param {string} [options.agentId]
 * @param {string} [options.sessionId] the session whose context.jsonl receives the conversation
 * @param {AbortSignal} [options.signal] stops the run and the command it is running
 * @param {(line: string) => void} [options.log] where the steps go (default console.log)
 * @returns {Promise<{ messages: import('@langchain/core/messages').BaseMessage[], answer: string, contextPath: string }>}
 */
export async function runLangChainAgent({
  workspace,
  model,
  prompt = TASK,
  agentId = 'langchain-example',
  sessionId = 'langchain-example',
  signal,
  log = console.log,
}) {
  // The one call: tools (built-ins, MCP tools of the scope, Skill) and the system-prompt text.
  const { tools, instructions } = await langChainTools(workspace, { agentId, sessionId, signal });
  const agent = createAgent({ model, tools, systemPrompt: instructions });

  let seen = 0;
  let messages = [];
  const stream = await agent.stream(
    { messages: [new HumanMessage(prompt)] },
    { streamMode: 'values', recursionLimit: 40, ...(signal ? { signal } : {}) },
  );
  for await (const state of stream) {
    messages = state.messages;
    for (const message of messages.slice(seen)) log(describe(message));
    seen = messages.length;
  }
  const contextPath = await offloadMessages(workspace, sessionId, messages, signal ? { signal } : {});
  log(`context offloaded to ${contextPath}`);
  return { messages, answer: messages.at(-1)?.text ?? '', contextPath };
}

/**
 * LangChain's offline test model, scripted to do {@link TASK} in `workdir` step by step; its last
 * answer quotes what the last tool call reported, so the run shows what the tools really did.
 * @param {string} workdir the workspace's directory, as the sandbox sees it
 */
export function scriptedModel(workdir) {
  const script = join(workdir, 'greet.sh');
  return fakeModel()
    .respondWithTools([
      { name: 'Write', args: { file_path: script, content: '#!/bin/sh\necho "Hello, world"\n' } },
    ])
    .respondWithTools([{ name: 'Read', args: { file_path: script } }])
    .respondWithTools([
      { name: 'Edit', args: { file_path: script, old_string: 'world', new_string: 'workspace' } },
    ])
    .respondWithTools([{ name: 'Grep', args: { pattern: 'Hello', path: workdir, output_mode: 'content' } }])
    .respondWithTools([{ name: 'Bash', args: { command: 'sh greet.sh', description: 'Run the script' } }])
    .respondWithTools([
      { name: 'Bash', args: { command: 'sh missing.sh', description: 'Run a missing script' } },
    ])
    .respond((messages) => {
      const last = messages.at(-1);
      const status = ToolMessage.isInstance(last) ? last.status : 'unknown';
      return new AIMessage(
        `The script printed its greeting; running missing.sh failed (status: ${status}): ${last?.text.trim()}`,
      );
    });
}

/** A real chat model when a provider key and its package are there, else undefined and why not. */
async function realModel() {
  const name =
    process.env.WS_EXAMPLE_MODEL ??
    (process.env.OPENAI_API_KEY
      ? 'openai:gpt-4.1-mini'
      : process.env.ANTHROPIC_API_KEY
        ? 'anthropic:claude-sonnet-4-5'
        : undefined);
  if (!name) return { reason: 'no OPENAI_API_KEY or ANTHROPIC_API_KEY' };
  try {
    return { model: await initChatModel(name), name };
  } catch (error) {
    return { reason: `${name} is not available: ${error.message}` };
  }
}

function describe(message) {
  if (AIMessage.isInstance(message) && message.tool_calls?.length) {
    return message.tool_calls.map((call) => `→ ${call.name} ${JSON.stringify(call.args)}`).join('\n');
  }
  if (ToolMessage.isInstance(message)) {
    const text = typeof message.content === 'string' ? message.content : '[content blocks]';
    return `← ${message.name} ${message.status}: ${text.trim().split('\n').slice(0, 4).join(' | ')}`;
  }
  return `${message.type}: ${message.text}`;
}

async function main() {
  const base = mkdtempSync(join(tmpdir(), 'ws-langchain-example-'));
  const workspace = new LocalWorkspace({ hostWorkdir: join(base, 'work') });
  try {
    await workspace.initialize();
    const real = await realModel();
    if (real.model) console.log(`model: ${real.name}`);
    else console.log(`model: LangChain's offline fakeModel, scripted (${real.reason})`);
    const model = real.model ?? scriptedModel(workspace.workdir);
    const { answer } = await runLangChainAgent({ workspace, model });
    console.log(`\nanswer: ${answer}`);
  } finally {
    await workspace.close();
    rmSync(base, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
