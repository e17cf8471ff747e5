import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { E2BWorkspace, killOwnedSandboxes } from '@ws/e2b';
import { startE2BEmulator } from '@ws/emulators';
import { Sandbox } from 'e2b';
import {
  freshFirstCommand,
  interleave,
  interleaveWithTeardown,
  median,
  metricRow,
  ratioRow,
} from '../harness.mjs';

export const name = 'e2b';

/**
 * Bash through the gateway against the raw SDK's `commands.run('true')`, both on the E2B emulator
 * (sandboxes as local containers), in one run; and the time to open a workspace.
 */
export async function run({ iterations }) {
  const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
  const problem = await dockerProblem(image);
  if (problem) return { skipped: `the E2B emulator needs Docker: ${problem}` };
  const emulator = await startE2BEmulator({ templates: { base: image } });
  const connection = {
    apiKey: emulator.env.E2B_API_KEY,
    apiUrl: emulator.apiUrl,
    sandboxUrl: emulator.sandboxUrl,
  };
  const owner = 'ws-bench-e2b';
  const rows = [];
  try {
    const opened = [];
    let workspace;
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      workspace = new E2BWorkspace({
        ...connection,
        owner,
        workspaceId: `bench-${round}-${Date.now().toString(36)}`,
      });
      await workspace.initialize();
      opened.push(performance.now() - started);
      if (round < 2) await workspace.destroy();
    }
    const first = await interleaveWithTeardown({
      subject: freshFirstCommand((workspaceId) => new E2BWorkspace({ ...connection, owner, workspaceId })),
      floor: async () => {
        const sandbox = await Sandbox.create('base', { ...connection, metadata: { 'ws.owner': owner } });
        await sandbox.commands.run('true');
        return () => sandbox.kill();
      },
      iterations: Math.max(2, Math.min(5, Math.round(iterations / 80))),
    });
    rows.push(
      ratioRow({
        scenario: 'E2B open + first command (emulator)',
        subject: "new workspace: initialize(), Bash 'true'",
        floor: "raw SDK Sandbox.create('base'), commands.run('true')",
        samples: first,
        target: 1.3,
      }),
    );
    try {
      const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
      const raw = await Sandbox.connect(workspace.sandboxId, connection);
      const samples = await interleave({
        subject: async () => {
          const result = await bash.call({ command: 'true' });
          if (result.isError) throw new Error(JSON.stringify(result.content));
        },
        floor: async () => {
          await raw.commands.run('true');
        },
        iterations: Math.max(30, Math.round(iterations / 4)),
        warmup: 5,
      });
      rows.push(
        ratioRow({
          scenario: 'E2B Bash round trip (emulator)',
          subject: "Bash 'true' (gateway over the sandbox's stdio)",
          floor: "raw SDK commands.run('true')",
          samples,
          target: 1.2,
        }),
        metricRow({
          scenario: 'E2B open (emulator, new sandbox)',
          subject: 'median initialize(), gateway included',
          value: median(opened),
          unit: 'ms',
        }),
      );
    } finally {
      await workspace.destroy();
    }
    return rows;
  } finally {
    await killOwnedSandboxes(owner, connection).catch(() => []);
    await emulator.close();
  }
}
