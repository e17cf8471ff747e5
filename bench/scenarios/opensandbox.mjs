import { Sandbox } from '@alibaba-group/opensandbox';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { startOpenSandboxEmulator } from '@ws/emulators';
import { killOwnedSandboxes, OpenSandboxWorkspace } from '@ws/opensandbox';
import {
  freshFirstCommand,
  interleave,
  interleaveWithTeardown,
  median,
  metricRow,
  ratioRow,
} from '../harness.mjs';

export const name = 'opensandbox';

/**
 * Bash through the gateway against the raw SDK's `commands.run('true')`, both on the OpenSandbox
 * emulator (sandboxes as local containers), in one run; and the time to open a workspace.
 */
export async function run({ iterations }) {
  const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
  const problem = await dockerProblem(image);
  if (problem) return { skipped: `the OpenSandbox emulator needs Docker: ${problem}` };
  const emulator = await startOpenSandboxEmulator({ instance: 'ws-bench-opensandbox' });
  const connection = { domain: emulator.url, apiKey: emulator.apiKey };
  const owner = 'ws-bench-opensandbox';
  const rows = [];
  try {
    const opened = [];
    let workspace;
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      workspace = new OpenSandboxWorkspace({
        ...connection,
        image,
        owner,
        workspaceId: `bench-${round}-${Date.now().toString(36)}`,
      });
      await workspace.initialize();
      opened.push(performance.now() - started);
      if (round < 2) await workspace.destroy();
    }
    const first = await interleaveWithTeardown({
      subject: freshFirstCommand(
        (workspaceId) => new OpenSandboxWorkspace({ ...connection, image, owner, workspaceId }),
      ),
      floor: async () => {
        const sandbox = await Sandbox.create({
          connectionConfig: connection,
          image,
          metadata: { 'ws.owner': owner },
        });
        await sandbox.commands.run('true');
        return async () => {
          await sandbox.kill();
          await sandbox.close();
        };
      },
      iterations: Math.max(2, Math.min(5, Math.round(iterations / 80))),
    });
    rows.push(
      ratioRow({
        scenario: 'OpenSandbox open + first command (emulator)',
        subject: "new workspace: initialize(), Bash 'true'",
        floor: "raw SDK Sandbox.create(), commands.run('true')",
        samples: first,
        target: 1.3,
      }),
    );
    try {
      const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
      const raw = await Sandbox.connect({ sandboxId: workspace.sandboxId, connectionConfig: connection });
      try {
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
            scenario: 'OpenSandbox Bash round trip (emulator)',
            subject: "Bash 'true' (gateway through execd's proxy to its port)",
            floor: "raw SDK commands.run('true')",
            samples,
            target: 1.2,
          }),
          metricRow({
            scenario: 'OpenSandbox open (emulator, new sandbox)',
            subject: 'median initialize(), gateway included',
            value: median(opened),
            unit: 'ms',
          }),
        );
      } finally {
        await raw.close();
      }
    } finally {
      await workspace.destroy();
    }
    return rows;
  } finally {
    await killOwnedSandboxes(owner, connection).catch(() => []);
    await emulator.close();
  }
}
