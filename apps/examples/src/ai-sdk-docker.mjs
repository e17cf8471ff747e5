// The AI SDK agent loop of ./ai-sdk.mjs, on a DockerWorkspace: the same tools, run in a container.
//
//   node apps/examples/src/ai-sdk-docker.mjs
//
// Needs a Docker engine and the image ws-workspace:bookworm (`npx ws-docker-image`); says why and exits
// with 1 when either is missing. Models as in ./ai-sdk.mjs: a real one when its key is set, the SDK's
// scripted mock otherwise.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem } from '@ws/docker';
import { pickAiSdkModel, printAiSdkStep, runAiSdkAgent } from './ai-sdk.mjs';

/**
 * Opens a DockerWorkspace, runs the AI SDK agent loop in it and closes it (the container goes, the
 * files of `hostWorkdir` stay).
 * @param {object} [options]
 * @param {string} [options.hostWorkdir] the host folder mounted as the workspace (default: a temp folder)
 * @param {string} [options.image] the image (default `ws-workspace:bookworm`)
 * @param {string} [options.owner] the `ws.owner` label of the container, to find it by
 * @param {import('ai').LanguageModel} [options.model] the model (default: {@link pickAiSdkModel})
 * @param {string} [options.sessionId] where the conversation is offloaded (default `example`)
 * @param {(step: import('ai').StepResult<any>) => void} [options.onStep] called after each step
 * @param {(line: string) => void} [options.log] where progress lines go (default: nowhere)
 */
export async function runAiSdkDockerExample({
  hostWorkdir = mkdtempSync(join(tmpdir(), 'ws-ai-sdk-docker-')),
  image = DEFAULT_DOCKER_IMAGE,
  owner,
  model,
  sessionId = 'example',
  onStep,
  log = () => {},
} = {}) {
  const workspace = await DockerWorkspace.open({ image, hostWorkdir, ...(owner ? { owner } : {}) });
  try {
    const picked = model ? { model, name: 'given' } : await pickAiSdkModel(workspace.workdir);
    log(
      `Model: ${picked.name}\nWorkspace: ${workspace.workdir} in ${workspace.containerName} (${hostWorkdir})\n`,
    );
    const result = await runAiSdkAgent({ workspace, model: picked.model, sessionId, onStep });
    return { result, model: picked.model, hostWorkdir, workdir: workspace.workdir };
  } finally {
    await workspace.close();
  }
}

async function main() {
  const problem = await dockerProblem(DEFAULT_DOCKER_IMAGE);
  if (problem) {
    console.error(`Docker example not run: ${problem}`);
    process.exitCode = 1;
    return;
  }
  const { hostWorkdir } = await runAiSdkDockerExample({ onStep: printAiSdkStep, log: console.log });
  console.log(`\nThe files stay in ${hostWorkdir}; the container is gone.`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
