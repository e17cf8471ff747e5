import { Daytona } from '@daytonaio/sdk';
import { DaytonaWorkspace, deleteOwnedSandboxes } from '@ws/daytona';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { startDaytonaEmulator } from '@ws/emulators';
import {
  freshFirstCommand,
  interleave,
  interleaveWithTeardown,
  median,
  metricRow,
  ratioRow,
} from '../harness.mjs';

export const name = 'daytona';

/**
 * Bash through the gateway against the raw SDK's `process.executeCommand('true')`, both on the
 * Daytona emulator (sandboxes as local containers), in one run; and the time to open a workspace.
 */
export async function run({ iterations }) {
  const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
  const problem = await dockerProblem(image);
  if (problem) return { skipped: `the Daytona emulator needs Docker: ${problem}` };
  const emulator = await startDaytonaEmulator({ snapshots: { default: image } });
  const connection = { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl };
  const owner = 'ws-bench-daytona';
  const rows = [];
  const daytona = new Daytona(connection);
  try {
    const opened = [];
    let workspace;
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      workspace = new DaytonaWorkspace({
        ...connection,
        owner,
        workspaceId: `bench-${round}-${Date.now().toString(36)}`,
      });
      await workspace.initialize();
      opened.push(performance.now() - started);
      if (round < 2) await workspace.destroy();
    }
    const first = await interleaveWithTeardown({
      subject: freshFirstCommand(
        (workspaceId) => new DaytonaWorkspace({ ...connection, owner, workspaceId }),
      ),
      floor: async () => {
        const sandbox = await daytona.create({ snapshot: 'default', labels: { 'ws.owner': owner } });
        await sandbox.process.executeCommand('true');
        return () => sandbox.delete();
      },
      iterations: Math.max(2, Math.min(5, Math.round(iterations / 80))),
    });
    rows.push(
      ratioRow({
        scenario: 'Daytona open + first command (emulator)',
        subject: "new workspace: initialize(), Bash 'true'",
        floor: "raw SDK daytona.create(), process.executeCommand('true')",
        samples: first,
        target: 1.3,
      }),
    );
    try {
      const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
      const raw = await daytona.get(workspace.sandboxId);
      const samples = await interleave({
        subject: async () => {
          const result = await bash.call({ command: 'true' });
          if (result.isError) throw new Error(JSON.stringify(result.content));
        },
        floor: async () => {
          await raw.process.executeCommand('true');
        },
        iterations: Math.max(30, Math.round(iterations / 4)),
        warmup: 5,
      });
      rows.push(
        ratioRow({
          scenario: 'Daytona Bash round trip (emulator)',
          subject: "Bash 'true' (gateway over a session command's logs)",
          floor: "raw SDK process.executeCommand('true')",
          samples,
          target: 1.2,
        }),
        metricRow({
          scenario: 'Daytona open (emulator, new sandbox)',
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
    await deleteOwnedSandboxes(owner, connection).catch(() => []);
    await daytona[Symbol.asyncDispose]().catch(() => {});
    await emulator.close();
  }
}
