// @ws on the cloud backends: a workspace opened with `initialize()`, commands through its Bash tool.
import { packageVersion } from './common.mjs';

export const system = '@ws';

export const api = {
  e2b: "new E2BWorkspace().initialize(), Bash tool call({ command: 'true' }), destroy()",
  daytona: "new DaytonaWorkspace().initialize(), Bash tool call({ command: 'true' }), destroy()",
};

export function version(vendor) {
  const name = vendor === 'e2b' ? '@ws/e2b' : '@ws/daytona';
  return `${name} ${packageVersion(name)}`;
}

let sequence = 0;

async function openWorkspace(workspace) {
  try {
    await workspace.initialize();
    const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
    if (!bash) throw new Error('the workspace lists no Bash tool');
    return {
      async run() {
        const result = await bash.call({ command: 'true' });
        if (result.isError) throw new Error(JSON.stringify(result.content).slice(0, 200));
      },
      close: () => workspace.destroy(),
    };
  } catch (error) {
    await workspace.destroy().catch(() => {});
    throw error;
  }
}

/** E2BWorkspace tagged with the bench's owner. */
export async function e2b({ connection, owner }) {
  const { E2BWorkspace } = await import('@ws/e2b');
  return () =>
    openWorkspace(
      new E2BWorkspace({
        ...connection,
        owner,
        workspaceId: `peers-${process.pid}-${sequence++}-${Date.now().toString(36)}`,
      }),
    );
}

/** DaytonaWorkspace tagged with the bench's owner. */
export async function daytona({ connection, owner }) {
  const { DaytonaWorkspace } = await import('@ws/daytona');
  return () =>
    openWorkspace(
      new DaytonaWorkspace({
        ...connection,
        owner,
        workspaceId: `peers-${process.pid}-${sequence++}-${Date.now().toString(36)}`,
      }),
    );
}
