// @ws through its public API: a workspace per backend (LocalWorkspace, BubblewrapWorkspace,
// DockerWorkspace), commands through the Bash tool, files through the workspace's sandbox
// (writeFile / readFile), search through the Grep and Glob tools.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { packageVersion } from './common.mjs';

export const system = '@ws';
export const missing = {};
export const notes = {
  grep: 'Grep tool: regex, files_with_matches over the whole tree (.git skipped), first 250 paths shown',
  glob: 'Glob tool: whole tree walked and sorted newest first (.git skipped), first 1000 paths shown',
};

export function version() {
  return packageVersion('@ws/local');
}

async function openWorkspace({ backend, workdir, image, owner }) {
  if (backend === 'local') {
    const { LocalWorkspace } = await import('@ws/local');
    return LocalWorkspace.open({ hostWorkdir: workdir });
  }
  if (backend === 'bwrap') {
    const { BubblewrapWorkspace } = await import('@ws/bwrap');
    const runtime = `${workdir}.runtime`;
    await mkdir(runtime, { recursive: true });
    return BubblewrapWorkspace.open({ hostWorkdir: workdir, hostRuntimeDir: runtime });
  }
  if (backend === 'docker') {
    const { DockerWorkspace } = await import('@ws/docker');
    return DockerWorkspace.open({
      image,
      owner,
      workspaceId: `peers-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
      ...(workdir ? { hostWorkdir: workdir } : {}),
    });
  }
  throw new Error(`unknown backend ${backend}`);
}

function check(result) {
  if (result.isError) throw new Error(result.content.map((part) => part.text ?? '').join('\n'));
  return result;
}

export async function open(options) {
  const workspace = await openWorkspace(options);
  const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
  const sandbox = workspace.getSandbox();
  // Inside a container the workdir is /workspace; on the host it is the host folder.
  const root = options.backend === 'local' ? options.workdir : '/workspace';
  const at = (path) => (options.workdir ? join(root, path.slice(options.workdir.length)) : path);
  return {
    workspace,
    async run(command) {
      check(await tools.Bash.call({ command }));
    },
    write: (path, bytes) => sandbox.writeFile(at(path), bytes),
    read: (path) => sandbox.readFile(at(path)),
    async grep(query, path) {
      const result = check(await tools.Grep.call({ pattern: query.regex, path }));
      return result.content[0].text.split('\n').filter((line) => line.startsWith('/')).length;
    },
    async glob(pattern, path) {
      const result = check(await tools.Glob.call({ pattern, path }));
      return result.content[0].text.split('\n').filter((line) => line.startsWith('/')).length;
    },
    close: () => workspace.close(),
  };
}
