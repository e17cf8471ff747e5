// Offloading with the Vercel AI SDK: `aiSdkTools(workspace, { offload })`. A tool prints a 5 MB build
// log; the model gets its head, its tail and the path of the file that holds all of it, and greps
// that file. A few turns later the conversation passes its budget: the oldest messages go to
// `sessions/<id>/context.jsonl` and a note naming that file takes their place; a second task is
// answered from it. Offline: the SDK's mock model plays the agent.
//
//   node apps/examples/src/ai-sdk-offload.mjs
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { aiSdkTools } from '@ws/ai-sdk';
import { LocalWorkspace } from '@ws/local';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import {
  BUILD_LOG_SERVER,
  FIRST_TASK,
  OFFLOAD_SCRIPT,
  OFFLOAD_SETTINGS,
  reportOffload,
  SECOND_TASK,
} from './offload-script.mjs';

/** The AI SDK's mock model playing {@link OFFLOAD_SCRIPT}, one step a call, reading what it was sent. */
export function scriptedOffloadModel() {
  let step = 0;
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const move = OFFLOAD_SCRIPT[step++]?.(JSON.stringify(prompt)) ?? { text: 'done' };
      const content = move.tool
        ? [
            {
              type: 'tool-call',
              toolCallId: `call-${step}`,
              toolName: move.tool,
              input: JSON.stringify(move.input),
            },
          ]
        : [{ type: 'text', text: move.text }];
      return {
        content,
        finishReason: { unified: move.tool ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: undefined, text: undefined, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
}

/**
 * Runs both tasks in one session and returns both results.
 * @param {object} options
 * @param {import('@ws/core').Workspace} options.workspace an initialised workspace
 * @param {import('ai').LanguageModel} [options.model] default: {@link scriptedOffloadModel}
 * @param {string} [options.sessionId] default `offload-demo`
 */
export async function runAiSdkOffload({
  workspace,
  model = scriptedOffloadModel(),
  sessionId = 'offload-demo',
}) {
  await workspace.addMcp(
    { name: 'logs', transport: { type: 'stdio', command: process.execPath, args: [BUILD_LOG_SERVER] } },
    { sessionId },
  );
  // The one option: over-size results are offloaded by the tools, the context by `prepareStep`.
  const { tools, instructions, prepareStep } = await aiSdkTools(workspace, {
    sessionId,
    offload: OFFLOAD_SETTINGS,
  });
  const messages = [{ role: 'user', content: FIRST_TASK }];
  const first = await generateText({
    model,
    tools,
    system: instructions,
    messages,
    prepareStep,
    stopWhen: stepCountIs(10),
  });
  messages.push(...first.response.messages, { role: 'user', content: SECOND_TASK });
  const second = await generateText({
    model,
    tools,
    system: instructions,
    messages,
    prepareStep,
    stopWhen: stepCountIs(5),
  });
  return { first, second, model };
}

/**
 * The build log's tool result as the model was sent it (head, tail and the file's path).
 * @param {MockLanguageModelV3} model
 * @returns {string}
 */
export function buildLogAsSent(model) {
  for (const { prompt } of model.doGenerateCalls)
    for (const message of prompt)
      if (message.role === 'tool')
        for (const part of message.content)
          if (part.type === 'tool-result' && String(part.output.value).includes('The whole result is in'))
            return String(part.output.value);
  return '';
}

async function main() {
  const workspace = new LocalWorkspace({ hostWorkdir: mkdtempSync(join(tmpdir(), 'ws-ai-sdk-offload-')) });
  await workspace.initialize();
  try {
    const { first, second, model } = await runAiSdkOffload({ workspace });
    reportOffload(workspace, {
      sent: buildLogAsSent(model),
      firstAnswer: first.text,
      secondAnswer: second.text,
    });
  } finally {
    await workspace.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
