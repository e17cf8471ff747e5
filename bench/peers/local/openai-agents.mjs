// The OpenAI Agents SDK's sandboxes through their public API (`@openai/agents/sandbox/local`):
// UnixLocalSandboxClient on the host and DockerSandboxClient in a container; commands through the
// session's exec(), files through materializeEntry() with a file entry and readFile().
import { assertBackend, BENCH_LABEL, inside, packageVersion } from './common.mjs';

export const system = 'OpenAI Agents SDK';
export const missing = {
  bwrap: 'no bubblewrap backend (UnixLocalSandboxClient runs commands unconfined on the host)',
  grep: 'no grep API in the sandbox session (only shell commands through exec)',
  glob: 'no glob API in the sandbox session (only listDir of one directory, or shell commands)',
};
export const notes = {
  local: 'UnixLocalSandboxClient: a fresh workspace folder under workspaceBaseDir, commands not confined',
  files: 'host file I/O goes through a Python helper process (fileIOProtection)',
};

export function version() {
  return packageVersion('@openai/agents');
}

export async function open({ backend, workdir, image }) {
  assertBackend(missing, backend);
  const sdk = await import('@openai/agents/sandbox/local');
  const client =
    backend === 'docker'
      ? new sdk.DockerSandboxClient({ image, labels: { [BENCH_LABEL]: '1' } })
      : new sdk.UnixLocalSandboxClient({ workspaceBaseDir: workdir });
  const session = await client.create();
  // Paths are given relative to the session's own workspace root.
  const at = (path) => (workdir ? inside(workdir, path) : path.replace(/^\/+/, ''));
  return {
    session,
    async run(command) {
      const result = await session.exec({ cmd: command });
      if (result.exitCode !== 0) throw new Error(`exit ${result.exitCode}: ${result.output}`);
    },
    write: (path, bytes) => session.materializeEntry({ path: at(path), entry: sdk.file({ content: bytes }) }),
    read: (path) => session.readFile({ path: at(path), maxBytes: 1 << 30 }),
    close: () => session.close(),
  };
}
