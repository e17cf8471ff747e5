// Offloading with the OpenAI Agents SDK: `openAiAgentTools(workspace, { offload })`. A tool prints a
// 5 MB build log; the model gets its head, its tail and the path of the file that holds all of it,
// and greps that file. A few turns later the conversation passes its budget: the oldest items go to
// `sessions/<id>/context.jsonl` and a note naming that file takes their place; a second task is
// answered from it. Offline: the SDK's scripted model plays the agent.
//
//   node apps/examples/src/openai-agents-offload.mjs
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, run, setTracingDisabled, user } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { LocalWorkspace } from '@ws/local';
import { openAiAgentTools } from '@ws/openai-agents';
import {
  BUILD_LOG_SERVER,
  FIRST_TASK,
  OFFLOAD_SCRIPT,
  OFFLOAD_SETTINGS,
  reportOffload,
  SECOND_TASK,
} from './offload-script.mjs';

/** The SDK's scripted model playing {@link OFFLOAD_SCRIPT}, one step a call, reading what it was sent. */
export function scriptedOffloadModel() {
  return new ScriptedModel(
    OFFLOAD_SCRIPT.map((step, index) =>
      modelResponder(({ request }) => {
        const move = step(JSON.stringify(request.input));
        return move.tool
          ? [functionCall(move.tool, move.input, { callId: `call-${index + 1}` })]
          : [assistantMessage(move.text)];
      }),
    ),
  );
}

/**
 * Runs both tasks in one session and returns both results.
 * @param {object} options
 * @param {import('@ws/core').Workspace} options.workspace an initialised workspace
 * @param {import('@openai/agents').Model | string} [options.model] default: {@link scriptedOffloadModel}
 * @param {string} [options.sessionId] default `offload-demo`
 */
export async function runOpenAiAgentsOffload({
  workspace,
  model = scriptedOffloadModel(),
  sessionId = 'offload-demo',
}) {
  await workspace.addMcp(
    { name: 'logs', transport: { type: 'stdio', command: process.execPath, args: [BUILD_LOG_SERVER] } },
    { sessionId },
  );
  // The one option: over-size results are offloaded by the tools, the context by the input filter.
  const { tools, instructions, callModelInputFilter } = await openAiAgentTools(workspace, {
    sessionId,
    offload: OFFLOAD_SETTINGS,
  });
  const agent = new Agent({ name: 'builder', instructions, tools, model });
  const first = await run(agent, FIRST_TASK, { callModelInputFilter, maxTurns: 10 });
  const second = await run(agent, [...first.history, user(SECOND_TASK)], {
    callModelInputFilter,
    maxTurns: 5,
  });
  return { first, second, model };
}

async function main() {
  setTracingDisabled(true);
  const workspace = new LocalWorkspace({
    hostWorkdir: mkdtempSync(join(tmpdir(), 'ws-openai-agents-offload-')),
  });
  await workspace.initialize();
  try {
    const { first, second } = await runOpenAiAgentsOffload({ workspace });
    const shown = first.history.find(
      (item) =>
        item.type === 'function_call_result' &&
        JSON.stringify(item.output).includes('The whole result is in'),
    );
    reportOffload(workspace, {
      sent: typeof shown.output === 'string' ? shown.output : shown.output.text,
      firstAnswer: first.finalOutput,
      secondAnswer: second.finalOutput,
      parked: 'items',
    });
  } finally {
    await workspace.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
