// An agent loop of the Vercel AI SDK (`generateText` with tools) over a @ws workspace.
//
//   node apps/examples/src/ai-sdk.mjs
//
// With AI_GATEWAY_API_KEY set it asks a real model through the AI Gateway (AI_SDK_MODEL, default
// openai/gpt-5-mini); with OPENAI_API_KEY set and @ai-sdk/openai installed, OpenAI directly. Otherwise
// the SDK's own mock model plays a scripted agent, offline.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { aiSdkTools, offloadModelMessages } from '@ws/ai-sdk';
import { LocalWorkspace } from '@ws/local';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

/** The task the example gives the agent: the same steps the scripted model takes. */
export const AI_SDK_TASK = [
  'In the workspace: write a shell script hello.sh that prints "Hello from the workspace", read it back,',
  'change the greeting to "Hello from the AI SDK", find the greeting with Grep, run the script with sh,',
  'then run `sh missing.sh` (which fails) and tell me what you saw.',
].join(' ');

/**
 * Runs one agent loop: the workspace's tools and instructions go to `generateText`, which calls the
 * model and the tools until the model answers in text (or `maxSteps` is reached). With a `sessionId`,
 * the conversation is offloaded to the workspace afterwards (`sessions/<id>/context.jsonl`).
 * @param {object} options
 * @param {import('@ws/core').Workspace} options.workspace an initialised workspace
 * @param {import('ai').LanguageModel} options.model the model (or a gateway model id)
 * @param {string} [options.prompt] the task (default {@link AI_SDK_TASK})
 * @param {string} [options.agentId] the agent, for its skills and MCP servers
 * @param {string} [options.sessionId] the session, for its MCP servers and the offloaded context
 * @param {number} [options.maxSteps] the most model calls (default 12)
 * @param {(step: import('ai').StepResult<any>) => void} [options.onStep] called after each step
 * @param {AbortSignal} [options.signal] aborts the model calls and the running tool
 */
export async function runAiSdkAgent({
  workspace,
  model,
  prompt = AI_SDK_TASK,
  agentId,
  sessionId,
  maxSteps = 12,
  onStep,
  signal,
}) {
  // The glue: one call gives the SDK the workspace's tools and the system-prompt text.
  const { tools, instructions } = await aiSdkTools(workspace, { agentId, sessionId });
  const messages = [{ role: 'user', content: prompt }];
  const result = await generateText({
    model,
    tools,
    system: instructions,
    messages,
    stopWhen: stepCountIs(maxSteps),
    abortSignal: signal,
    onStepFinish: onStep,
  });
  if (sessionId) await offloadModelMessages(workspace, sessionId, [...messages, ...result.response.messages]);
  return result;
}

/**
 * The AI SDK's mock model (`MockLanguageModelV3` from `ai/test`) scripted as an agent doing
 * {@link AI_SDK_TASK} in `workdir`: one tool call a turn, then an answer built from the tool results
 * it was sent, so what it says is what the SDK showed it.
 * @param {string} workdir the workspace's directory, as its tools see it
 */
export function scriptedAiSdkModel(workdir) {
  const script = `${workdir}/hello.sh`;
  const turns = [
    ['Write', { file_path: script, content: '#!/bin/sh\necho "Hello from the workspace"\n' }],
    ['Read', { file_path: script }],
    [
      'Edit',
      { file_path: script, old_string: 'Hello from the workspace', new_string: 'Hello from the AI SDK' },
    ],
    ['Grep', { pattern: 'Hello from', path: workdir, output_mode: 'content' }],
    ['Bash', { command: 'sh hello.sh', description: 'Run the script' }],
    ['Bash', { command: 'sh missing.sh', description: 'Run a script that is not there' }],
  ];
  let turn = 0;
  return new MockLanguageModelV3({
    doGenerate: async ({ prompt }) => {
      const step = turns[turn];
      turn += 1;
      const content = step
        ? [
            {
              type: 'tool-call',
              toolCallId: `call-${turn}`,
              toolName: step[0],
              input: JSON.stringify(step[1]),
            },
          ]
        : [{ type: 'text', text: summary(prompt) }];
      return {
        content,
        finishReason: { unified: step ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: undefined, text: undefined, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
}

// The scripted agent's answer: the output of its run and the error it saw, as the SDK sent them.
function summary(prompt) {
  const results = prompt
    .filter((message) => message.role === 'tool')
    .flatMap((message) => message.content)
    .filter((part) => part.type === 'tool-result');
  const run = results.find((part) => part.toolCallId === 'call-5')?.output;
  const failed = results.find((part) => part.toolCallId === 'call-6')?.output;
  return [
    `The script printed: ${String(run?.value ?? '').trim()}`,
    `The last command failed (${failed?.type}): ${String(failed?.value ?? '').trim()}`,
  ].join('\n');
}

/**
 * The model to use: a real one when its key is set (the AI Gateway's `AI_GATEWAY_API_KEY`, or
 * `OPENAI_API_KEY` with `@ai-sdk/openai` installed), the scripted mock otherwise.
 * @param {string} workdir the workspace's directory, for the scripted model
 * @returns {Promise<{ model: import('ai').LanguageModel, name: string }>}
 */
export async function pickAiSdkModel(workdir) {
  const modelId = process.env.AI_SDK_MODEL;
  if (process.env.AI_GATEWAY_API_KEY) {
    const id = modelId ?? 'openai/gpt-5-mini';
    return { model: id, name: `${id} (AI Gateway)` };
  }
  if (process.env.OPENAI_API_KEY) {
    try {
      const { openai } = await import('@ai-sdk/openai');
      const id = modelId ?? 'gpt-5-mini';
      return { model: openai(id), name: `${id} (OpenAI)` };
    } catch {
      console.warn('OPENAI_API_KEY is set but @ai-sdk/openai is not installed: using the scripted model');
    }
  }
  return { model: scriptedAiSdkModel(workdir), name: 'scripted MockLanguageModelV3 (offline)' };
}

/**
 * Prints a step: each tool call and what came back (`ok`, or `error` for a failed call).
 * @param {import('ai').StepResult<any>} step
 */
export function printAiSdkStep(step) {
  for (const toolCall of step.toolCalls)
    console.log(`→ ${toolCall.toolName} ${JSON.stringify(toolCall.input)}`);
  for (const toolResult of step.toolResults) {
    const output = toolResult.output;
    const text = output.content
      .map((item) => (item.type === 'text' ? item.text : `[${item.type}]`))
      .join(' ');
    console.log(
      `← ${output.isError ? 'error' : 'ok'}: ${text
        .split('\n')
        .filter((line) => line.trim())
        .slice(0, 3)
        .join(' | ')}`,
    );
  }
  for (const error of step.content.filter((part) => part.type === 'tool-error'))
    console.log(`← thrown: ${error.error}`);
  if (step.text) console.log(`\n${step.text}`);
}

async function main() {
  const workspace = new LocalWorkspace({ hostWorkdir: mkdtempSync(join(tmpdir(), 'ws-ai-sdk-example-')) });
  await workspace.initialize();
  try {
    const { model, name } = await pickAiSdkModel(workspace.workdir);
    console.log(`Model: ${name}\nWorkspace: ${workspace.workdir}\n`);
    await runAiSdkAgent({ workspace, model, sessionId: 'example', onStep: printAiSdkStep });
    console.log(`\nConversation offloaded to ${workspace.workdir}/sessions/example/context.jsonl`);
  } finally {
    await workspace.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
