import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '@ws/docker';
import Docker from 'dockerode';
import { interleave, median, metricRow, ratioRow } from '../harness.mjs';

export const name = 'docker';

/** A raw Engine-API `docker exec`: create, start attached, read to the end, inspect. */
async function rawExec(container, cmd) {
  const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  stream.resume();
  await new Promise((resolve) => stream.once('end', resolve).once('close', resolve));
  return (await exec.inspect()).ExitCode;
}

/** Bash through the gateway against raw docker exec; re-attach and cold start times. */
export async function run({ iterations }) {
  const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
  const problem = await dockerProblem(image);
  if (problem) return { skipped: problem };
  const docker = new Docker();
  const root = await mkdtemp(join(tmpdir(), 'ws-bench-docker-'));
  const owner = 'ws-bench';
  const rows = [];
  try {
    const workspaceId = `bench-${Date.now().toString(36)}`;
    const workspace = await DockerWorkspace.open({
      image,
      owner,
      workspaceId,
      hostWorkdir: join(root, 'work'),
    });
    try {
      const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
      const container = docker.getContainer(workspace.containerName);
      const samples = await interleave({
        subject: async () => {
          const result = await bash.call({ command: 'true' });
          if (result.isError) throw new Error(JSON.stringify(result.content));
        },
        floor: () => rawExec(container, ['/bin/sh', '-c', 'true']),
        iterations: Math.max(30, Math.round(iterations / 4)),
        warmup: 5,
      });
      rows.push(
        ratioRow({
          scenario: 'Docker Bash round trip',
          subject: "Bash 'true' (gateway)",
          floor: 'raw Engine-API docker exec',
          samples,
          target: 0.2,
        }),
      );

      const reattach = [];
      for (let round = 0; round < 5; round++) {
        const started = performance.now();
        const again = await DockerWorkspace.open({
          image,
          owner,
          workspaceId,
          hostWorkdir: join(root, 'work'),
        });
        reattach.push(performance.now() - started);
        await again.close();
      }
      rows.push(
        metricRow({
          scenario: 'Docker re-attach (running container)',
          subject: 'median initialize()',
          value: median(reattach),
          unit: 'ms',
          target: 300,
        }),
      );
    } finally {
      await workspace.destroy();
    }

    // A workspace's whole life against the Engine API doing the same: create, start, one command, remove.
    let round = 0;
    const cold = [];
    const life = await interleave({
      subject: async () => {
        const started = performance.now();
        const fresh = await DockerWorkspace.open({
          image,
          owner,
          workspaceId: `bench-life-${++round}-${Date.now().toString(36)}`,
        });
        cold.push(performance.now() - started);
        const result = await fresh.getSandbox().exec(['sh', '-c', 'true']);
        if (result.exitCode !== 0) throw new Error(result.stderrText);
        await fresh.close();
      },
      floor: async () => {
        const container = await docker.createContainer({
          Image: image,
          Cmd: ['sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'],
          Labels: { 'ws.owner': owner },
          HostConfig: { CapDrop: ['ALL'] },
        });
        await container.start();
        await rawExec(container, ['sh', '-c', 'true']);
        await container.remove({ force: true });
      },
      iterations: 10,
      warmup: 2,
    });
    rows.push(
      ratioRow({
        scenario: 'Docker create + first command + close',
        subject: 'open, exec true, close',
        floor: 'Engine API create, start, exec, remove',
        samples: life,
        target: 1.2,
      }),
      metricRow({
        scenario: 'Docker cold start (image present)',
        subject: 'median initialize()',
        value: median(cold),
        unit: 'ms',
      }),
    );
    return rows;
  } finally {
    await removeOwnedContainers(owner).catch(() => []);
    await rm(root, { recursive: true, force: true });
  }
}
