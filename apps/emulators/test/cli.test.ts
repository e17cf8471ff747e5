import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { launchEmulator } from '../src/index.js';

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.js');
const engineProblem = requireEngine(
  'docker',
  await new Docker().ping().then(
    () => undefined,
    (error: Error) => `no Docker engine answers (${error.message}); start dockerd`,
  ),
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

/** A foreground emulator: its exported env (once `count` lines are out), its log, and its exit. */
async function foreground(args: string[], count: number) {
  requireBuild();
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk) => {
    output.stdout += chunk;
  });
  child.stderr!.on('data', (chunk) => {
    output.stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (let waited = 0; output.stdout.split('\n').length <= count && waited < 20_000; waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50));
  const env: Record<string, string> = Object.fromEntries(
    [...output.stdout.matchAll(/^export ([A-Z0-9_]+)=(.*)$/gm)].map((match) => [match[1], match[2]]),
  );
  const stop = async () => {
    child.kill('SIGTERM');
    return exited;
  };
  return { env, output, stop };
}

describe('ws-emulator', () => {
  it('prints its usage with --help', () => {
    const result = run(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: ws-emulator e2b [--port N] [--template ID=IMAGE]');
    expect(result.stdout).toContain('E2B_SANDBOX_URL');
    expect(result.stdout).toContain(
      'ws-emulator daytona [--port N] [--public-port N] [--snapshot NAME=IMAGE]',
    );
    expect(result.stdout).toContain('ws-emulator k8s [--port N] [--image NAME=IMAGE]');
    expect(result.stdout).toContain(
      'ws-emulator opensandbox [--port N] [--public-port N] [--image URI=IMAGE]',
    );
    // Every vendor's limits, with the real service's defaults.
    expect(result.stdout).toContain('--limit NAME=VALUE');
    for (const vendor of ['e2b', 'daytona', 'k8s', 'opensandbox'])
      expect(result.stdout).toMatch(new RegExp(`^  ${vendor}: [a-zA-Z]+=\\d`, 'm'));
  });

  it('refuses bad arguments with one line and exit code 2', () => {
    for (const [args, reason] of [
      [['e2b', '--nope'], 'unknown option --nope'],
      [['e2b', '--port', 'eighty'], '--port takes a port number, not eighty'],
      [['e2b', '--template', 'base'], '--template takes ID=IMAGE, not base'],
      [['nope'], 'unknown emulator "nope"'],
      [['daytona', '--snapshot', 'base'], '--snapshot takes NAME=IMAGE, not base'],
      [['daytona', '--template', 'a=b'], '--template is not a daytona option; use --snapshot'],
      [['k8s', '--image', 'ws'], '--image takes NAME=IMAGE, not ws'],
      [['k8s', '--api-key', 'k'], '--api-key is not a k8s option; use --token'],
      [['opensandbox', '--token', 't'], '--token is a k8s option'],
      [['opensandbox', '--snapshot', 'a=b'], '--snapshot is not an opensandbox option; use --image'],
      [['daytona', '--public-port', 'x'], '--public-port takes a port number, not x'],
      [['e2b', '--public-port', '8080'], '--public-port is a daytona and opensandbox option'],
      [[], 'name the emulator to run'],
      [['e2b', '--limit', 'nope=1'], 'e2b has no limit "nope"; its limits are '],
      [['k8s', '--limit', 'requestBodyBytes'], '--limit takes NAME=NUMBER, not requestBodyBytes'],
      [['opensandbox', '--limit', 'x=-1'], '--limit takes NAME=NUMBER, not x=-1'],
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
      const { env, output, stop } = await foreground(
        ['e2b', '--api-key', 'cli-key', '--template', 'tiny=ws-workspace:bookworm-bare'],
        3,
      );
      expect(Object.keys(env).sort(), output.stderr).toEqual([
        'E2B_API_KEY',
        'E2B_API_URL',
        'E2B_SANDBOX_URL',
      ]);
      expect(env.E2B_API_KEY).toBe('cli-key');
      expect(env.E2B_API_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(env.E2B_SANDBOX_URL).toBe(env.E2B_API_URL);
      const listed = await fetch(`${env.E2B_API_URL}/v2/sandboxes`, { headers: { 'x-api-key': 'cli-key' } });
      expect(listed.status).toBe(200);
      expect(Array.isArray(await listed.json())).toBe(true);
      const refused = await fetch(`${env.E2B_API_URL}/v2/sandboxes`, { headers: { 'x-api-key': 'other' } });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({ code: 401, message: 'Invalid API key' });
      expect(await stop()).toBe(0);
      expect(output.stderr).toContain('GET /v2/sandboxes 200');
    },
    30_000,
  );

  it.skipIf(engineProblem !== undefined)(
    'an emulator launched here lists the requests it does not implement, and enforces a --limit',
    async () => {
      requireBuild();
      const emulator = await launchEmulator('k8s', ['--no-network', '--limit', 'requestBodyBytes=1024']);
      try {
        const url = emulator.env.K8S_API_URL;
        const headers = {
          authorization: `Bearer ${emulator.env.K8S_TOKEN}`,
          'content-type': 'application/json',
        };
        expect(emulator.unimplemented).toEqual([]);
        const unknown = await fetch(`${url}/apis/batch/v1/namespaces/default/jobs?limit=1`, { headers });
        expect(unknown.status).toBe(404);
        const tooLarge = await fetch(`${url}/api/v1/namespaces/default/configmaps`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ data: { big: 'x'.repeat(4096) } }),
        });
        expect(tooLarge.status).toBe(413);
        // The log line reaches this process after the answer: wait for it a little.
        for (let waited = 0; emulator.unimplemented.length === 0 && waited < 5_000; waited += 50)
          await new Promise((resolve) => setTimeout(resolve, 50));
        expect(emulator.unimplemented).toEqual(['GET /apis/batch/v1/namespaces/default/jobs']);
      } finally {
        await emulator.stop();
      }
    },
    60_000,
  );

  it.skipIf(engineProblem !== undefined)(
    'an emulator launched here stops and exits on stop(), its stdin pipe still open',
    async () => {
      requireBuild();
      const emulator = await launchEmulator('k8s', ['--no-network']);
      const url = emulator.env.K8S_API_URL;
      const stopped = await Promise.race([
        emulator.stop().then(() => 'exited'),
        new Promise((resolve) => setTimeout(() => resolve('still running after 15 s'), 15_000)),
      ]);
      expect(stopped).toBe('exited');
      const answers = await fetch(`${url}/version`, { signal: AbortSignal.timeout(2_000) }).then(
        () => true,
        () => false,
      );
      expect(answers).toBe(false);
    },
    60_000,
  );

  it.skipIf(engineProblem !== undefined)(
    'an emulator launched by a process that is killed stops by itself (its stdin ends)',
    async () => {
      requireBuild();
      const index = join(dirname(bin), 'index.js');
      const parent = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const { launchEmulator } = await import(${JSON.stringify(index)});
const emulator = await launchEmulator('e2b', ['--no-network']);
console.log('ready ' + emulator.env.E2B_API_URL);
setInterval(() => {}, 60_000);`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(parent);
      let printed = '';
      parent.stdout!.on('data', (chunk) => {
        printed += chunk;
      });
      for (let waited = 0; !/ready \S+/.test(printed) && waited < 20_000; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const url = /ready (\S+)/.exec(printed)?.[1];
      expect(url, 'the emulator did not start').toBeDefined();
      const answers = () =>
        fetch(`${url}/v2/sandboxes`, {
          headers: { 'x-api-key': 'k' },
          signal: AbortSignal.timeout(2_000),
        }).then(
          () => true,
          () => false,
        );
      expect(await answers()).toBe(true);
      parent.kill('SIGKILL');
      let alive = true;
      for (let waited = 0; alive && waited < 15_000; waited += 200) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        alive = await answers();
      }
      expect(alive, 'the emulator still answers 15 s after its parent was killed').toBe(false);
    },
    60_000,
  );

  it.skipIf(engineProblem !== undefined)(
    'runs the Daytona emulator in the foreground, prints the env to export, and stops on SIGTERM',
    async () => {
      const { env, output, stop } = await foreground(
        ['daytona', '--api-key', 'cli-key', '--instance', `cli-${process.pid}`],
        2,
      );
      expect(Object.keys(env).sort(), output.stderr).toEqual(['DAYTONA_API_KEY', 'DAYTONA_API_URL']);
      expect(env.DAYTONA_API_KEY).toBe('cli-key');
      expect(env.DAYTONA_API_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api$/);
      const listed = await fetch(`${env.DAYTONA_API_URL}/sandbox`, {
        headers: { authorization: 'Bearer cli-key' },
      });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toEqual({ items: [], nextCursor: null });
      const refused = await fetch(`${env.DAYTONA_API_URL}/sandbox`, {
        headers: { authorization: 'Bearer other' },
      });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({
        statusCode: 401,
        message: 'Unauthorized',
        error: 'Unauthorized',
        path: '/api/sandbox',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(await stop()).toBe(0);
      expect(output.stderr).toContain('GET /api/sandbox 200');
    },
    30_000,
  );

  it.skipIf(engineProblem !== undefined)(
    'runs the Kubernetes emulator in the foreground, writes its kubeconfig, and removes it on SIGTERM',
    async () => {
      const { env, output, stop } = await foreground(
        ['k8s', '--token', 'cli-token', '--instance', `cli-${process.pid}`],
        3,
      );
      expect(Object.keys(env).sort(), output.stderr).toEqual(['K8S_API_URL', 'K8S_TOKEN', 'KUBECONFIG']);
      expect(env.K8S_TOKEN).toBe('cli-token');
      expect(readFileSync(env.KUBECONFIG!, 'utf8')).toContain(`server: "${env.K8S_API_URL}"`);
      const listed = await fetch(`${env.K8S_API_URL}/api/v1/namespaces/default/pods`, {
        headers: { authorization: 'Bearer cli-token' },
      });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toMatchObject({ kind: 'PodList', items: [] });
      const refused = await fetch(`${env.K8S_API_URL}/api/v1/namespaces/default/pods`, {
        headers: { authorization: 'Bearer other' },
      });
      expect(refused.status).toBe(401);
      expect(await stop()).toBe(0);
      expect(existsSync(env.KUBECONFIG!)).toBe(false);
    },
    30_000,
  );

  it.skipIf(engineProblem !== undefined)(
    'runs the OpenSandbox emulator in the foreground, prints the env to export, and stops on SIGTERM',
    async () => {
      const { env, output, stop } = await foreground(
        ['opensandbox', '--api-key', 'cli-key', '--instance', `cli-${process.pid}`],
        2,
      );
      expect(Object.keys(env).sort(), output.stderr).toEqual(['OPEN_SANDBOX_API_KEY', 'OPEN_SANDBOX_DOMAIN']);
      expect(env.OPEN_SANDBOX_API_KEY).toBe('cli-key');
      const listed = await fetch(`${env.OPEN_SANDBOX_DOMAIN}/v1/sandboxes`, {
        headers: { 'open-sandbox-api-key': 'cli-key' },
      });
      expect(listed.status).toBe(200);
      const refused = await fetch(`${env.OPEN_SANDBOX_DOMAIN}/v1/sandboxes`, {
        headers: { 'open-sandbox-api-key': 'other' },
      });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      expect(await stop()).toBe(0);
      expect(output.stderr).toContain('GET /v1/sandboxes 200');
    },
    30_000,
  );
});
