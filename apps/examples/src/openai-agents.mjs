// An OpenAI Agents SDK agent with a @ws workspace: it writes a script, reads it, edits it, searches
// it, runs it, and meets a failing command. Run it with `node apps/examples/src/openai-agents.mjs`
// (add `--docker` for a Docker workspace): with OPENAI_API_KEY set it uses the SDK's default model,
// otherwise the SDK's own scripted test model plays the same steps offline.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, run, setTracingDisabled } from '@openai/agents';
import { assistantMessage, functionCall, modelResponder, ScriptedModel } from '@openai/agents/testing';
import { openAiAgentTools } from '@ws/openai-agents';

/**
 * What the agent is asked to do in `workdir`.
 * @param {string} workdir the workspace directory inside the sandbox
 * @returns {string}
 */
export function taskFor(workdir) {
  return [
    `In ${workdir}:`,
    '1. Write greet.mjs, a Node.js script that prints "Hello, <name>!" for the name given as its first argument (default "world").',
    '2. Read it back.',
    '3. Edit it so that it says "Hi" instead of "Hello".',
    '4. Search the .mjs files for "Hi," with Grep.',
    '5. Run `node greet.mjs agents` with Bash.',
    '6. Run `node missing.mjs` with Bash, which fails, and say in one sentence what each run printed.',
  ].join('\n');
}

/**
 * Gives an agent the workspace in one call and runs it on the task.
 * @param {object} options
 * @param {import('@ws/core').Workspace} options.workspace an initialised workspace
 * @param {import('@openai/agents').Model | string} [options.model] a model; the SDK's default when absent
 * @param {string} [options.agentId] the agent (its skills and MCP scope), default `coder`
 * @param {string} [options.sessionId] the session (its MCP servers), default `example`
 * @param {string} [options.task] what to ask, default {@link taskFor} the workdir
 * @param {number} [options.maxTurns] default 20
 * @param {AbortSignal} [options.signal] aborting stops the run and the command it runs
 * @returns {Promise<{ finalOutput: string | undefined, steps: Step[], result: import('@openai/agents').RunResult<undefined, Agent<unknown, 'text'>> }>}
 */
export async function runOpenAiAgentsAgent({
  workspace,
  model,
  agentId = 'coder',
  sessionId = 'example',
  task,
  maxTurns = 20,
  signal,
}) {
  // The one call: the workspace's tools and instructions, as the SDK takes them.
  const { tools, instructions } = await openAiAgentTools(workspace, { agentId, sessionId });
  const agent = new Agent({ name: 'coder', instructions, tools, ...(model ? { model } : {}) });
  const input = task ?? taskFor(workspace.getSandbox().workdir);
  const result = await run(agent, input, { maxTurns, ...(signal ? { signal } : {}) });
  return { finalOutput: result.finalOutput, steps: stepsOf(result.newItems), result };
}

/**
 * @typedef {object} Step One tool call of a run.
 * @property {string} tool the tool's name
 * @property {unknown} input the arguments the model sent
 * @property {string} output what the model saw, as text
 * @property {boolean} isError whether the tool reported a failure
 */

/**
 * The tool calls of a run, each with what the model saw and whether it failed.
 * @param {readonly import('@openai/agents').RunItem[]} items
 * @returns {Step[]}
 */
export function stepsOf(items) {
  /** @type {Map<string, Step>} */
  const steps = new Map();
  for (const item of items) {
    const raw = item.rawItem;
    if (item.type === 'tool_call_item' && raw.type === 'function_call') {
      steps.set(raw.callId, { tool: raw.name, input: parse(raw.arguments), output: '', isError: false });
    } else if (item.type === 'tool_call_output_item' && raw.type === 'function_call_result') {
      const step = steps.get(raw.callId);
      if (!step) continue;
      step.output = textOf(raw.output);
      step.isError = item.customData?.isError === true;
    }
  }
  return [...steps.values()];
}

/**
 * The SDK's scripted test model, playing the task's steps in `workdir` and answering from what the
 * tools returned (so its last message quotes the real outputs).
 * @param {string} workdir the workspace directory inside the sandbox
 * @returns {ScriptedModel}
 */
export function scriptedModel(workdir) {
  const script = posix.join(workdir, 'greet.mjs');
  /** @param {string} name @param {Record<string, unknown>} args @param {string} callId */
  const call = (name, args, callId) => [functionCall(name, args, { callId })];
  return new ScriptedModel([
    call(
      'Write',
      {
        file_path: script,
        content: "const name = process.argv[2] ?? 'world';\nconsole.log('Hello, ' + name + '!');\n",
      },
      'write',
    ),
    call('Read', { file_path: script }, 'read'),
    call('Edit', { file_path: script, old_string: 'Hello', new_string: 'Hi' }, 'edit'),
    call('Grep', { pattern: 'Hi,', glob: '*.mjs', output_mode: 'content' }, 'grep'),
    call('Bash', { command: 'node greet.mjs agents', description: 'Run the script' }, 'run'),
    call('Bash', { command: 'node missing.mjs', description: 'Run a script that is not there' }, 'fail'),
    modelResponder(({ request }) => {
      const seen = outputsOf(request.input);
      const ran = (seen.get('run') ?? '').trim();
      const failed = (seen.get('fail') ?? '').split('\n')[0];
      return [assistantMessage(`greet.mjs printed "${ran}"; node missing.mjs failed: ${failed}`)];
    }),
  ]);
}

/** @param {unknown} input the model request's input @returns {Map<string, string>} output text by call id */
function outputsOf(input) {
  const outputs = new Map();
  for (const item of Array.isArray(input) ? input : []) {
    if (item.type === 'function_call_result') outputs.set(item.callId, textOf(item.output));
  }
  return outputs;
}

/** @param {unknown} output a tool output as the SDK stores it @returns {string} */
function textOf(output) {
  if (typeof output === 'string') return output;
  const parts = Array.isArray(output) ? output : [output];
  return parts
    .map((part) => {
      if (part?.type === 'text' || part?.type === 'input_text') return part.text;
      return part?.type ? `[${part.type}]` : '';
    })
    .join('\n');
}

/** @param {string} text @returns {unknown} */
function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** @param {Step} step @returns {string} one line per step, for people */
export function formatStep(step) {
  const input = JSON.stringify(step.input);
  const output = step.output.replace(/\s+/g, ' ').trim();
  const shown = output.length > 100 ? `${output.slice(0, 100)}…` : output;
  return `${step.isError ? '✗' : '✓'} ${step.tool} ${input.length > 80 ? `${input.slice(0, 80)}…` : input}\n    → ${shown}`;
}

async function main() {
  const docker = process.argv.includes('--docker');
  const live = Boolean(process.env.OPENAI_API_KEY);
  if (!live) setTracingDisabled(true);
  const folder = mkdtempSync(join(tmpdir(), 'ws-example-openai-agents-'));
  const workspace = docker
    ? new (await import('@ws/docker')).DockerWorkspace({ hostWorkdir: folder })
    : new (await import('@ws/local')).LocalWorkspace({ hostWorkdir: folder });
  try {
    await workspace.initialize();
    const workdir = workspace.getSandbox().workdir;
    console.log(
      `${docker ? 'Docker' : 'Local'} workspace in ${folder}; model: ${live ? "the SDK's default (OPENAI_API_KEY is set)" : 'the SDK scripted test model (set OPENAI_API_KEY for a real one)'}`,
    );
    const { finalOutput, steps } = await runOpenAiAgentsAgent({
      workspace,
      ...(live ? {} : { model: scriptedModel(workdir) }),
    });
    for (const step of steps) console.log(formatStep(step));
    console.log(`\n${finalOutput}`);
  } finally {
    await workspace.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
