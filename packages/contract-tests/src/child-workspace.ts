import { spawn } from 'node:child_process';
import type { CaseControls } from './harness.js';
import type { AreaContext } from './target.js';

/** A workspace of the target opened in a separate Node process (see {@link openInChild}). */
export interface ChildWorkspace {
  /** Resolves once the child printed `line` (a line of its stdout); false if it ended first. */
  printed(line: string): Promise<boolean>;
  /** Resolves with the exit code (or the signal's name) once the child ended. */
  readonly ended: Promise<number | string | null>;
  kill(signal: NodeJS.Signals): void;
  stderr(): string;
}

/**
 * Opens the target's workspace `workspaceId` in a separate Node process (`target.process`), then runs
 * `script` there with `workspace` in scope (an async module body; `say(line)` prints a line).
 */
export function openInChild(
  context: AreaContext,
  test: CaseControls,
  workspaceId: string,
  script: string,
): ChildWorkspace {
  const target = context.target.process;
  if (!target) test.skip('the target gives no way to open its workspace in another process (target.process)');
  const options = target.options({ workspaceId });
  const source = `
const { ${target.exportName}: Workspace } = await import(${JSON.stringify(target.module)});
const say = (line) => process.stdout.write(line + '\\n');
const workspace = new Workspace(${JSON.stringify(options)});
await workspace.initialize();
${script}
`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiting: { line: string; resolve: (seen: boolean) => void }[] = [];
  const ended = new Promise<number | string | null>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal)),
  );
  void ended.then(() => {
    for (const wait of waiting.splice(0)) wait.resolve(stdout.split('\n').includes(wait.line));
  });
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    const lines = stdout.split('\n');
    for (const wait of [...waiting]) {
      if (!lines.includes(wait.line)) continue;
      waiting.splice(waiting.indexOf(wait), 1);
      wait.resolve(true);
    }
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return {
    printed: (line) =>
      stdout.split('\n').includes(line)
        ? Promise.resolve(true)
        : child.exitCode !== null || child.signalCode !== null
          ? Promise.resolve(false)
          : new Promise((resolve) => waiting.push({ line, resolve })),
    ended,
    kill: (signal) => {
      child.kill(signal);
    },
    stderr: () => stderr,
  };
}
