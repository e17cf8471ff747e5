import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';

/** The image behind the emulator's `base` template: the one of @ws/docker. */
export const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;

// The emulator's command, run as its own process: a service apart, as E2B is, so that this process's
// memory is the workspace's alone.
const emulatorBin = join(
  dirname(createRequire(import.meta.url).resolve('@ws/emulators/package.json')),
  'dist',
  'bin.js',
);

/** Why the emulated suites cannot run here (no engine, image or built emulator), or undefined. */
export async function emulatorProblem(): Promise<string | undefined> {
  const problem = await dockerProblem(image);
  if (problem) return `the E2B emulator needs Docker: ${problem}`;
  if (!existsSync(emulatorBin)) return `${emulatorBin} is missing: build @ws/emulators first (npm test does)`;
  return undefined;
}

export interface EmulatorConnection {
  apiKey: string;
  apiUrl: string;
  sandboxUrl: string;
}

let child: ChildProcess | undefined;
let started: Promise<EmulatorConnection> | undefined;

/** The connection options of one emulator per test file, started on first use (`ws-emulator e2b`). */
export function connection(): Promise<EmulatorConnection> {
  started ??= new Promise<EmulatorConnection>((resolve, reject) => {
    // Its own instance: emulators of other suites on the engine leave these sandboxes alone.
    const instance = `ws-e2b-${randomBytes(4).toString('hex')}`;
    const process_ = spawn(
      process.execPath,
      [emulatorBin, 'e2b', '--port', '0', '--quiet', '--instance', instance, '--template', `base=${image}`],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child = process_;
    let output = '';
    let log = '';
    process_.stderr.on('data', (chunk) => {
      log += chunk;
    });
    process_.stdout.on('data', (chunk) => {
      output += chunk;
      const url = /E2B_API_URL=(\S+)/.exec(output)?.[1];
      const key = /E2B_API_KEY=(\S+)/.exec(output)?.[1];
      if (url && key) resolve({ apiKey: key, apiUrl: url, sandboxUrl: url });
    });
    process_.once('exit', (code) => reject(new Error(`the emulator exited (${code}): ${log}`)));
  });
  return started;
}

export async function stopEmulator(): Promise<void> {
  const running = child;
  child = undefined;
  started = undefined;
  if (!running || running.exitCode !== null) return;
  const exited = new Promise((resolve) => running.once('exit', resolve));
  running.kill('SIGTERM');
  await exited;
}
