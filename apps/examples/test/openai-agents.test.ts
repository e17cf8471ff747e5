import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTracingDisabled } from '@openai/agents';
import { requireEngine } from '@ws/contract-tests';
import type { Workspace } from '@ws/core';
import { generateId } from '@ws/core';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '@ws/docker';
import { LocalWorkspace } from '@ws/local';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module, the example as users run it.
import { runOpenAiAgentsAgent, scriptedModel } from '../src/openai-agents.mjs';

setTracingDisabled(true);

const here = dirname(fileURLToPath(import.meta.url));
const base = mkdtempSync(join(tmpdir(), 'ws-examples-openai-agents-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const dockerSkip = requireEngine('docker', await dockerProblem(image));
if (dockerSkip) console.log(`skipping the Docker run of the OpenAI Agents example: ${dockerSkip}`);

/** One step of the example's run, as it reports them. */
interface Step {
  tool: string;
  isError: boolean;
  output: string;
}

/** The offline loop on one workspace: real tools, the real SDK runner, the SDK's scripted model. */
async function offlineLoop(workspace: Workspace, hostFolder: string): Promise<void> {
  const model = scriptedModel(workspace.getSandbox().workdir);
  const { finalOutput, steps, result } = await runOpenAiAgentsAgent({ workspace, model });
  model.assertComplete();

  expect(steps.map((step: Step) => step.tool)).toEqual(['Write', 'Read', 'Edit', 'Grep', 'Bash', 'Bash']);
  // The file is real, and edited.
  expect(readFileSync(join(hostFolder, 'greet.mjs'), 'utf8')).toBe(
    "const name = process.argv[2] ?? 'world';\nconsole.log('Hi, ' + name + '!');\n",
  );
  const [write, read, edit, grep, ran, failed] = steps;
  expect(write?.isError).toBe(false);
  expect(read?.output).toContain("2\tconsole.log('Hello, ' + name + '!');");
  expect(edit?.isError).toBe(false);
  expect(grep?.output).toContain('greet.mjs');
  expect(grep?.output).toContain("greet.mjs:2:console.log('Hi, ' + name + '!');");
  expect(ran).toMatchObject({ isError: false, output: 'Hi, agents!\n' });
  // The failing command reaches the model as an error, and the run goes on.
  expect(failed?.isError).toBe(true);
  expect(failed?.output).toMatch(/^Error: Command failed: node missing\.mjs/);
  expect(failed?.output).toContain('Cannot find module');
  expect(finalOutput).toBe(
    'greet.mjs printed "Hi, agents!"; node missing.mjs failed: Error: Command failed: node missing.mjs',
  );
  // The run's items: a call and an output per step, then the answer.
  expect(result.newItems.map((item: { type: string }) => item.type)).toEqual([
    ...Array.from({ length: 6 }, () => ['tool_call_item', 'tool_call_output_item']).flat(),
    'message_output_item',
  ]);
}

describe('the OpenAI Agents SDK example', () => {
  it('runs the loop offline on a LocalWorkspace: write, read, edit, grep, run, fail', async () => {
    const folder = join(base, 'local');
    const workspace = new LocalWorkspace({ hostWorkdir: folder });
    await workspace.initialize();
    try {
      await offlineLoop(workspace, folder);
    } finally {
      await workspace.close();
    }
  });

  it.skipIf(dockerSkip !== undefined)('runs the same loop on a DockerWorkspace', async () => {
    const owner = `ws-test-${generateId().slice(0, 8)}`;
    const folder = join(base, 'docker');
    const workspace = new DockerWorkspace({ hostWorkdir: folder, image, owner });
    try {
      await workspace.initialize();
      expect(workspace.getSandbox().workdir).toBe('/workspace');
      await offlineLoop(workspace, folder);
    } finally {
      await workspace.close();
      await removeOwnedContainers(owner).catch(() => []);
    }
  });

  const apiKeySkip = process.env.OPENAI_API_KEY ? undefined : 'OPENAI_API_KEY is not set';
  if (apiKeySkip) console.log(`skipping the real-model run of the OpenAI Agents example: ${apiKeySkip}`);
  it.skipIf(apiKeySkip !== undefined)(
    "runs the task with the SDK's default model",
    async () => {
      setTracingDisabled(false);
      const folder = join(base, 'live');
      const workspace = new LocalWorkspace({ hostWorkdir: folder });
      await workspace.initialize();
      try {
        const { steps, finalOutput } = await runOpenAiAgentsAgent({ workspace });
        const tools = new Set(steps.map((step: Step) => step.tool));
        for (const name of ['Write', 'Edit', 'Bash']) expect(tools).toContain(name);
        expect(readFileSync(join(folder, 'greet.mjs'), 'utf8')).toContain('Hi');
        expect(steps.some((step: Step) => step.tool === 'Bash' && step.isError)).toBe(true);
        expect(finalOutput).toMatch(/Hi, agents/);
      } finally {
        setTracingDisabled(true);
        await workspace.close();
      }
    },
    180_000,
  );

  // The script as a user runs it: it needs the built packages (`npm run setup`).
  const built = ['openai-agents', 'local', 'core'].map((name) =>
    join(here, '..', '..', '..', 'packages', name, 'dist', 'index.js'),
  );
  const unbuilt = built.find((file) => !existsSync(file));
  const buildSkip = requireEngine('build', unbuilt && `${unbuilt} is not built`);
  if (buildSkip) console.log(`skipping the run of openai-agents.mjs as a script: ${buildSkip}`);
  it.skipIf(buildSkip !== undefined)('runs as a script, prints its steps and exits by itself', async () => {
    const env = { ...process.env };
    delete env.OPENAI_API_KEY;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(here, '..', 'src', 'openai-agents.mjs')],
      { env, timeout: 60_000 },
    );
    expect(stdout).toContain('SDK scripted test model');
    expect(stdout).toMatch(/✓ Bash \{"command":"node greet\.mjs agents"/);
    expect(stdout).toMatch(/✗ Bash \{"command":"node missing\.mjs"/);
    expect(stdout).toContain('greet.mjs printed "Hi, agents!"');
  });
});
