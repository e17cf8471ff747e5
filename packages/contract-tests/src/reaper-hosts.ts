import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { requireEngine } from './engines.js';
import type { ReaperCreateOptions, ReaperProcessTarget } from './reaper-target.js';

/** A host process of the reaper suite: a separate Node process that opens the target's workspace. */
export interface HostProcess {
  /** Resolves with the first stdout line starting `prefix` (without it); rejects if the process ends first. */
  said(prefix: string): Promise<string>;
  /** Resolves with the exit code (or the signal's name) once the process ended. */
  readonly ended: Promise<number | string | null>;
  /** Ends its stdin: a holding host then closes its manager and exits. */
  release(): void;
  kill(): void;
}

/** The built module a host imports, or why it is missing. */
function moduleOf(target: ReaperProcessTarget): { path: string } | { problem: string } {
  const path = target.module.startsWith('file:') ? fileURLToPath(target.module) : target.module;
  return existsSync(path)
    ? { path }
    : { problem: `${path} is missing: build the packages first (npm test does)` };
}

/**
 * Why host processes cannot run (the packages are not built), or undefined; under `CI=true` it throws
 * instead (see `requireEngine`).
 */
export function hostProblem(target: ReaperProcessTarget): string | undefined {
  const built = moduleOf(target);
  return requireEngine('build', 'problem' in built ? built.problem : undefined);
}

/**
 * Starts a host that opens the workspace, then runs `script` (an async module body with `say(line)`).
 * `manager`: through a `WorkspaceManager`'s lease (`lease` in scope), else `workspace` alone.
 */
export function startHost(
  target: ReaperProcessTarget,
  create: ReaperCreateOptions,
  how: 'manager' | 'workspace',
  script: string,
): HostProcess {
  const built = moduleOf(target);
  if ('problem' in built) throw new Error(built.problem);
  const options = JSON.stringify(target.options(create));
  const open =
    how === 'manager'
      ? // The core the backend's build imports (plain node resolves it to its build), so the manager
        // and the workspace share one core.
        `const { createRequire } = await import('node:module');
const { WorkspaceManager } = await import(createRequire(${JSON.stringify(built.path)}).resolve('@ws/core'));
const { workspaceId: _, ...shared } = ${options};
const manager = new WorkspaceManager({
  factory: ${target.factoryName ? `backend[${JSON.stringify(target.factoryName)}](shared)` : '(workspaceId) => new Workspace({ ...shared, workspaceId })'},
});
const lease = await manager.acquire({ workspaceId: ${JSON.stringify(create.workspaceId)} });
const workspace = lease.workspace;`
      : `const workspace = new Workspace(${options});
await workspace.initialize();`;
  const source = `const backend = await import(${JSON.stringify(built.path)});
const Workspace = backend[${JSON.stringify(target.exportName)}];
const say = (line) => process.stdout.write(line + '\\n');
${open}
${script}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const ended = new Promise<number | string | null>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal)),
  );
  const line = (prefix: string) =>
    stdout
      .split('\n')
      .find((candidate) => candidate.startsWith(prefix))
      ?.slice(prefix.length);
  return {
    said: (prefix) =>
      new Promise((resolve, reject) => {
        const look = () => {
          const found = line(prefix);
          if (found === undefined) return false;
          child.stdout.off('data', look);
          resolve(found);
          return true;
        };
        if (look()) return;
        child.stdout.on('data', look);
        void ended.then((code) => {
          if (!look()) reject(new Error(`the host ended (${code}) before saying ${prefix}: ${stderr}`));
        });
      }),
    ended,
    release: () => child.stdin.end(),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Leaves an orphan: a host that opens the workspace and is killed with it open. */
export async function crashWhileOpen(
  target: ReaperProcessTarget,
  create: ReaperCreateOptions,
): Promise<void> {
  const host = startHost(target, create, 'workspace', `say('open');\nprocess.kill(process.pid, 'SIGKILL');`);
  await host.said('open');
  const ended = await host.ended;
  if (ended !== 'SIGKILL')
    throw new Error(`the host of ${create.workspaceId} ended with ${ended}, not SIGKILL`);
}
