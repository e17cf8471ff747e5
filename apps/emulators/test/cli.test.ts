import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.js');
const engineProblem = await new Docker().ping().then(
  () => undefined,
  (error: Error) => `no Docker engine answers (${error.message}); start dockerd`,
);
if (engineProblem) console.warn(`[ws-emulator cli] the run case is skipped: ${engineProblem}`);

function requireBuild(): void {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the packages first (npm test does)`);
}

function run(args: string[]) {
  requireBuild();
  return spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 30_000 });
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('ws-emulator', () => {
  it('prints its usage with --help', () => {
    const result = run(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: ws-emulator e2b [--port N] [--template ID=IMAGE]');
    expect(result.stdout).toContain('E2B_SANDBOX_URL');
    expect(result.stdout).toContain('Usage: ws-emulator e2b [--port N] [--template ID=IMAGE]');
    expect(result.stdout).toContain('ws-emulator daytona [--port N] [--snapshot NAME=IMAGE]');
  });

  it('refuses bad arguments with one line and exit code 2', () => {
    for (const [args, reason] of [
      [['e2b', '--nope'], 'unknown option --nope'],
      [['e2b', '--port', 'eighty'], '--port takes a port number, not eighty'],
      [['e2b', '--template', 'base'], '--template takes ID=IMAGE, not base'],
      [['nope'], 'unknown emulator "nope"'],
      [['daytona', '--snapshot', 'base'], '--snapshot takes NAME=IMAGE, not base'],
      [['daytona', '--template', 'a=b'], '--template is an e2b option'],
      [[], 'name the emulator to run'],
    ] as const) {
      const result = run([...args]);
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(reason);
      expect(result.stderr).toMatch(/^ws-emulator: .*\(see --help\)\n$/);
    }
  });

  it.skipIf(engineProblem !== undefined)(
    'runs the E2B emulator in the foreground, prints the env to export, and stops on SIGTERM',
    async () => {
      requireBuild();
      const child = spawn(
        process.execPath,
        [bin, 'e2b', '--api-key', 'cli-key', '--template', 'tiny=ws-workspace:bookworm-bare'],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk) => {
        stdout += chunk;
      });
      child.stderr!.on('data', (chunk) => {
        stderr += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      for (let waited = 0; stdout.split('\n').length < 4 && waited < 20_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const env = Object.fromEntries(
        [...stdout.matchAll(/^export (E2B_[A-Z_]+)=(.*)$/gm)].map((match) => [match[1], match[2]]),
      );
      expect(Object.keys(env).sort(), stderr).toEqual(['E2B_API_KEY', 'E2B_API_URL', 'E2B_SANDBOX_URL']);
      expect(env.E2B_API_KEY).toBe('cli-key');
      expect(env.E2B_API_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(env.E2B_SANDBOX_URL).toBe(env.E2B_API_URL);
      const listed = await fetch(`${env.E2B_API_URL}/v2/sandboxes`, { headers: { 'x-api-key': 'cli-key' } });
      expect(listed.status).toBe(200);
      expect(Array.isArray(await listed.json())).toBe(true);
      const refused = await fetch(`${env.E2B_API_URL}/v2/sandboxes`, { headers: { 'x-api-key': 'other' } });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({ code: 401, message: 'Invalid API key' });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).toContain('GET /v2/sandboxes 200');
    },
    30_000,
  );
  it.skipIf(engineProblem !== undefined)(
    'runs the Daytona emulator in the foreground, prints the env to export, and stops on SIGTERM',
    async () => {
      requireBuild();
      const instance = `cli-${process.pid}`;
      const child = spawn(
        process.execPath,
        [bin, 'daytona', '--api-key', 'cli-key', '--instance', instance],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk) => {
        stdout += chunk;
      });
      child.stderr!.on('data', (chunk) => {
        stderr += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      for (let waited = 0; stdout.split('\n').length < 3 && waited < 20_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const env = Object.fromEntries(
        [...stdout.matchAll(/^export (DAYTONA_[A-Z_]+)=(.*)$/gm)].map((match) => [match[1], match[2]]),
      );
      expect(Object.keys(env).sort(), stderr).toEqual(['DAYTONA_API_KEY', 'DAYTONA_API_URL']);
      expect(env.DAYTONA_API_KEY).toBe('cli-key');
      expect(env.DAYTONA_API_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
      const listed = await fetch(`${env.DAYTONA_API_URL}/sandbox`, {
        headers: { authorization: 'Bearer cli-key' },
      });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual({ items: [], total: 0, nextCursor: null });
      const refused = await fetch(`${env.DAYTONA_API_URL}/sandbox`, {
        headers: { authorization: 'Bearer other' },
      });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({
        statusCode: 401,
        message: 'Unauthorized',
        error: 'Unauthorized',
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(stderr).toContain('GET /api/sandbox 200');
    },
    30_000,
  );
});
