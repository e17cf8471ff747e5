import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { generateId, type ToolResult } from '@ws/core';
import { DEFAULT_DOCKER_IMAGE, dockerProblem, removeOwnedContainers } from '@ws/docker';

/** The workdir inside a Docker workspace's container. */
const CONTAINER_WORKDIR = '/workspace';

import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module, the example as users run it.
import { scriptedAiSdkModel } from '../src/ai-sdk.mjs';
// @ts-expect-error: a plain ES module, the example as users run it.
import { runAiSdkDockerExample } from '../src/ai-sdk-docker.mjs';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[ai-sdk docker example] skipped: ${problem}`);
const base = mkdtempSync(join(tmpdir(), 'ws-example-ai-sdk-docker-'));
// Every container of this file carries this owner label, so whatever a failed case left is removed.
const owner = `ws-test-${generateId().slice(0, 8)}`;

afterAll(async () => {
  if (!problem) await removeOwnedContainers(owner).catch(() => []);
  rmSync(base, { recursive: true, force: true });
}, 120_000);

describe.skipIf(problem !== undefined)('the AI SDK example on a DockerWorkspace', () => {
  it('runs the same loop in a container: the files are real, the failing command reaches the model as an error', async () => {
    const hostWorkdir = join(base, 'work');
    const model = scriptedAiSdkModel(CONTAINER_WORKDIR);
    const { result, workdir } = await runAiSdkDockerExample({ hostWorkdir, image, owner, model });

    expect(workdir).toBe(CONTAINER_WORKDIR);
    const outputs: ToolResult[] = result.steps.flatMap(
      (step: { toolResults: Array<{ output: ToolResult }> }) => step.toolResults.map((part) => part.output),
    );
    expect(outputs.map((output) => output.isError)).toEqual([false, false, false, false, false, true]);
    const text = (output: ToolResult) =>
      output.content.map((item) => (item.type === 'text' ? item.text : '')).join('');
    expect(text(outputs[3]!)).toContain(`${CONTAINER_WORKDIR}/hello.sh:2:echo "Hello from the AI SDK"`);
    expect(text(outputs[4]!).trim()).toBe('Hello from the AI SDK');
    expect(text(outputs[5]!)).toMatch(/missing\.sh/);

    const lastPrompt = model.doGenerateCalls.at(-1).prompt as Array<{
      role: string;
      content: Array<{ output?: { type: string } }>;
    }>;
    const types = lastPrompt
      .filter((message) => message.role === 'tool')
      .flatMap((message) => message.content.map((part) => part.output?.type));
    expect(types).toEqual(['text', 'text', 'text', 'text', 'text', 'error-text']);
    expect(result.text).toMatch(/The last command failed \(error-text\)/);

    // The container is gone; the bind-mounted files stay on the host.
    expect(readFileSync(join(hostWorkdir, 'hello.sh'), 'utf8')).toBe(
      '#!/bin/sh\necho "Hello from the AI SDK"\n',
    );
    expect(readFileSync(join(hostWorkdir, 'sessions', 'example', 'context.jsonl'), 'utf8')).toContain(
      '"role":"tool"',
    );
  }, 180_000);
});
