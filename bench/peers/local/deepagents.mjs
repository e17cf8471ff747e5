// deepagents' backends through their public API: LocalShellBackend (FilesystemBackend plus
// execute()) on the host; files through uploadFiles() / downloadFiles() (bytes), search through
// grep() and glob().
import { assertBackend, packageVersion } from './common.mjs';

export const system = 'deepagents';
export const missing = {
  bwrap: 'no bubblewrap backend (LocalShellBackend runs commands unconfined on the host)',
  docker:
    'no Docker backend in deepagents (only LangSmith sandboxes built in; others through BaseSandbox subclasses)',
};
export const notes = {
  local: 'LocalShellBackend: spawn with shell: true, unconfined on the host',
  grep: 'grep() is literal-only (no regex: searched "needle_"), every match line returned (hidden dirs skipped)',
  glob: 'glob() returns every match with stat data, .git included',
};

export function version() {
  return packageVersion('deepagents');
}

export async function open({ backend, workdir }) {
  assertBackend(missing, backend);
  const { LocalShellBackend } = await import('deepagents');
  // virtualMode off: paths are the host's absolute paths, as @ws takes them.
  const shell = await LocalShellBackend.create({ rootDir: workdir, virtualMode: false, inheritEnv: true });
  return {
    backend: shell,
    async run(command) {
      const result = await shell.execute(command);
      if (result.exitCode !== 0) throw new Error(`exit ${result.exitCode}: ${result.output}`);
    },
    async write(path, bytes) {
      const [result] = await shell.uploadFiles([[path, bytes]]);
      if (result.error) throw new Error(result.error);
    },
    async read(path) {
      const [result] = await shell.downloadFiles([path]);
      if (result.error) throw new Error(result.error);
      return result.content;
    },
    async grep(query, path) {
      const result = await shell.grep(query.literal, path);
      if (result.error) throw new Error(result.error);
      return result.matches.length;
    },
    async glob(pattern, path) {
      const result = await shell.glob(pattern, path);
      if (result.error) throw new Error(result.error);
      return result.files.length;
    },
    close: () => shell.close(),
  };
}
