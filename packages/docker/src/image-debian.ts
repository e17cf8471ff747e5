// The `debian` build of the workspace image: the shipped build-image.sh (debootstrap), run and watched.
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { WsError } from '@ws/core';
import { abortError } from '@ws/core/backend';
import type { BuildDockerImageOptions, Progress } from './image-build.js';

const DOCKERFILE_HINT =
  "or build from the Dockerfile instead (ws-docker-image --from dockerfile, or from: 'dockerfile')";

/** Runs `script` (the shipped `build-image.sh`) for `tag`, its lines as progress; its failure as a WsError. */
export async function buildFromDebian(
  script: string,
  tag: string,
  options: BuildDockerImageOptions,
  progress: Progress,
  /** The node to copy in (a host binary), `debian` for bookworm's nodejs; undefined: the script's choice. */
  node?: string,
): Promise<void> {
  if (!onPath('docker'))
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `The docker CLI is not on PATH (the debian build drives it): install it, ${DOCKERFILE_HINT}`,
      { details: { image: tag, from: 'debian' } },
    );
  progress.line(`from debian: ${script} ${tag}`);
  const env: NodeJS.ProcessEnv = { ...process.env, FORCE: options.force ? '1' : '' };
  if (options.mirror !== undefined) env.MIRROR = options.mirror;
  if (node === 'debian') env.NODE_FROM = 'debian';
  else if (node !== undefined) env.NODE_BIN = node;
  // Its own process group, so that an abort stops debootstrap and docker too, not only bash.
  const child = spawn('bash', [script, tag], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const errors: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.trim()) progress.line(line.replace(/^build-image: /, ''));
  });
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (!line.trim()) return;
    errors.push(line);
    if (errors.length > 30) errors.shift();
    progress.line(line.replace(/^build-image: /, ''), !line.startsWith('build-image: '));
  });
  const code = await waitFor(child, options.signal);
  if (code === 0) return;
  const last = errors.findLast((line) => line.startsWith('build-image: ')) ?? errors.at(-1);
  const reason = last?.replace(/^build-image: /, '') ?? `build-image.sh exited with code ${code}`;
  const details = { image: tag, from: 'debian', exitCode: code, log: errors };
  if (reason.includes('debootstrap is missing'))
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `debootstrap is missing: install it as root (apt-get install debootstrap), ${DOCKERFILE_HINT}`,
      { details },
    );
  if (reason.includes('needs root'))
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `The debian build runs debootstrap, which needs root: run it as root (e.g. sudo npx ws-docker-image), ${DOCKERFILE_HINT}`,
      { details },
    );
  throw new WsError('BACKEND_ERROR', `Building ${tag} from debian failed: ${reason}`, { details });
}

/** Waits for the build script; on abort, stops its whole process group and throws `ABORTED` once it exited. */
function waitFor(child: ChildProcess, signal: AbortSignal | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const kill = (how: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, how);
      } catch {
        // Already gone.
      }
    };
    let hard: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      kill('SIGTERM');
      hard = setTimeout(() => kill('SIGKILL'), 10_000);
      hard.unref();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (error) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new WsError('BACKEND_UNAVAILABLE', `Cannot run bash for the debian build: ${error.message}`));
    });
    child.once('close', (code, killedBy) => {
      signal?.removeEventListener('abort', onAbort);
      if (hard) clearTimeout(hard);
      if (signal?.aborted) reject(abortError(signal));
      else resolve(code ?? (killedBy ? 128 : 1));
    });
  });
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir || '.', command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
