// Mastra's workspace through its public API (`@mastra/core/workspace`, `@mastra/docker`): a
// Workspace of a LocalFilesystem and a LocalSandbox (isolation 'none' or 'bwrap') or a
// DockerSandbox; commands through the sandbox's executeCommand(), files through the filesystem's
// writeFile() / readFile(), search through the workspace tools (grep, list_files with a pattern).
import { assertBackend, BENCH_LABEL, countLines, inside, packageVersion } from './common.mjs';

export const system = 'Mastra';
export const missing = {};
export const notes = {
  grep: 'grep tool: JS regex, stops at 1000 matches (output truncated), hidden dirs skipped',
  glob: 'list_files tool with a glob pattern: a tree listing, output truncated',
  docker: '@mastra/docker DockerSandbox (dockerode)',
};

export function version() {
  return `core ${packageVersion('@mastra/core', '@mastra/core/workspace')}`;
}

export function dockerVersion() {
  return packageVersion('@mastra/docker');
}

export async function open({ backend, workdir, image, commands = true }) {
  assertBackend(missing, backend);
  const core = await import('@mastra/core/workspace');
  let sandbox;
  if (commands && backend === 'docker') {
    const { DockerSandbox } = await import('@mastra/docker');
    sandbox = new DockerSandbox({ image, labels: { [BENCH_LABEL]: '1' } });
  } else if (commands) {
    sandbox = new core.LocalSandbox({
      workingDirectory: workdir,
      isolation: backend === 'bwrap' ? 'bwrap' : 'none',
    });
  }
  const filesystem = workdir ? new core.LocalFilesystem({ basePath: workdir }) : undefined;
  const workspace = new core.Workspace({ filesystem, sandbox });
  try {
    await workspace.init();
  } catch (error) {
    await workspace.destroy().catch(() => {});
    throw error;
  }
  let tools;
  const tool = async (name) => {
    tools ??= await core.createWorkspaceTools(workspace);
    return tools[name];
  };
  return {
    workspace,
    async run(command) {
      const result = await sandbox.executeCommand(command);
      if (result.exitCode !== 0) throw new Error(`exit ${result.exitCode}: ${result.stderr}`);
    },
    write: (path, bytes) => filesystem.writeFile(inside(workdir, path), bytes),
    read: (path) => filesystem.readFile(inside(workdir, path)),
    async grep(query, path) {
      const grep = await tool(core.WORKSPACE_TOOLS.FILESYSTEM.GREP);
      const output = await grep.execute({ pattern: query.regex, path: inside(workdir, path) }, { workspace });
      return countLines(output);
    },
    async glob(pattern, path) {
      const list = await tool(core.WORKSPACE_TOOLS.FILESYSTEM.LIST_FILES);
      const output = await list.execute(
        { path: inside(workdir, path), pattern, maxDepth: 64 },
        { workspace },
      );
      return countLines(output);
    },
    close: () => workspace.destroy(),
  };
}
