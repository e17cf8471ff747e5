// Offloading with LangChain (langchain v1 `createAgent`): `langChainTools(workspace, { offload })`. A
// tool prints a 5 MB build log; the ToolMessage holds its head, its tail and the path of the file
// that holds all of it, and the agent greps that file. A few turns later the conversation passes its
// budget: the middleware moves the oldest messages to `sessions/<id>/context.jsonl` and a note
// naming that file takes their place in the state; a second task is answered from it. Offline:
// `fakeModel()` from `@langchain/core/testing` plays the agent.
//
//   node apps/examples/src/langchain-offload.mjs
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { langChainTools } from '@ws/langchain';
import { LocalWorkspace } from '@ws/local';
import { createAgent } from 'langchain';
import {
  BUILD_LOG_SERVER,
  FIRST_TASK,
  OFFLOAD_SCRIPT,
  OFFLOAD_SETTINGS,
  reportOffload,
  SECOND_TASK,
} from './offload-script.mjs';

/** `fakeModel()` playing {@link OFFLOAD_SCRIPT}, one step a call, reading the messages it was sent. */
export function scriptedOffloadModel() {
  let model = fakeModel();
  OFFLOAD_SCRIPT.forEach((step, index) => {
    model = model.respond((messages) => {
      const move = step(JSON.stringify(messages.map((message) => message.content)));
      return move.tool
        ? new AIMessage({
            content: '',
            tool_calls: [{ id: `call-${index + 1}`, name: move.tool, args: move.input, type: 'tool_call' }],
          })
        : new AIMessage(move.text);
    });
  });
  return model;
}

/**
 * Runs both tasks in one session and returns the state after each.
 * @param {object} options
 * @param {import('@ws/core').Workspace} options.workspace an initialized workspace
 * @param {import('@langchain/core/language_models/chat_models').BaseChatModel} [options.model] default: {@link scriptedOffloadModel}
 * @param {string} [options.sessionId] default `offload-demo`
 */
export async function runLangChainOffload({
  workspace,
  model = scriptedOffloadModel(),
  sessionId = 'offload-demo',
}) {
  await workspace.addMcp(
    { name: 'logs', transport: { type: 'stdio', command: process.execPath, args: [BUILD_LOG_SERVER] } },
    { sessionId },
  );
  // The one option: over-size results are offloaded by the tools, the context by the middleware.
  const { tools, instructions, offloadMiddleware } = await langChainTools(workspace, {
    sessionId,
    offload: OFFLOAD_SETTINGS,
  });
  const agent = createAgent({ model, tools, systemPrompt: instructions, middleware: [offloadMiddleware] });
  const first = await agent.invoke({ messages: [new HumanMessage(FIRST_TASK)] }, { recursionLimit: 30 });
  const second = await agent.invoke(
    { messages: [...first.messages, new HumanMessage(SECOND_TASK)] },
    { recursionLimit: 30 },
  );
  return { first, second, model };
}

/**
 * The build log's ToolMessage as the model was sent it (head, tail and the file's path).
 * @param {import('@langchain/core/messages').BaseMessage[][]} conversations
 * @returns {string}
 */
export function buildLogAsSent(conversations) {
  for (const messages of conversations)
    for (const message of messages)
      if (ToolMessage.isInstance(message) && String(message.content).includes('The whole result is in'))
        return String(message.content);
  return '';
}

async function main() {
  const workspace = new LocalWorkspace({ hostWorkdir: mkdtempSync(join(tmpdir(), 'ws-langchain-offload-')) });
  await workspace.initialize();
  try {
    const { first, second, model } = await runLangChainOffload({ workspace });
    reportOffload(workspace, {
      sent: buildLogAsSent(model.calls.map((call) => call.messages)),
      firstAnswer: first.messages.at(-1).content,
      secondAnswer: second.messages.at(-1).content,
    });
  } finally {
    await workspace.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
