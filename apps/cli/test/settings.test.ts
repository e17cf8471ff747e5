import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, runWs } from './helpers.js';

beforeAll(assertBuilt);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-settings-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function config(name: string, settings: unknown): Promise<string> {
  const path = join(scratch, name);
  await writeFile(path, typeof settings === 'string' ? settings : JSON.stringify(settings));
  return path;
}

/** `pwd` in the workspace `ws exec` opens with these arguments and variables. */
function workdirOf(args: string[], env: Record<string, string> = {}): string {
  const result = runWs(['exec', ...args, '--', 'pwd'], env);
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.trim();
}

describe('ws: settings from flags, the environment and a config file', () => {
  it('takes a flag first, then WS_*, then the file (paths relative to the file)', async () => {
    const file = await config('ws.json', { backend: 'local', workdir: './from-file' });
    expect(workdirOf(['--config', file])).toBe(join(scratch, 'from-file'));
    expect(workdirOf([], { WS_CONFIG: file })).toBe(join(scratch, 'from-file'));
    const fromEnv = join(scratch, 'from-env');
    expect(workdirOf(['--config', file], { WS_WORKDIR: fromEnv })).toBe(fromEnv);
    const fromFlag = join(scratch, 'from-flag');
    expect(workdirOf(['--config', file, '--workdir', fromFlag], { WS_WORKDIR: fromEnv })).toBe(fromFlag);
  });

  it("uses the chosen backend's section; top-level settings of other backends are ignored", async () => {
    const file = await config('sections.json', {
      image: 'only-for-containers:latest',
      env: { FROM: 'file', BOTH: 'file' },
      local: { workdir: 'local-files' },
      docker: { image: 'ws-workspace:bookworm', network: 'none' },
    });
    const result = runWs([
      'exec',
      '--config',
      file,
      '--env',
      'BOTH=flag',
      '--',
      'sh',
      '-c',
      'pwd; echo $FROM $BOTH',
    ]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${join(scratch, 'local-files')}\nfile flag\n`);
  });

  it('ws ls takes its roots from the file', async () => {
    await mkdir(join(scratch, 'roots', 'w'), { recursive: true });
    await writeFile(join(scratch, 'roots', 'w', '.ws-Zz9999.tmp'), '');
    const file = await config('roots.json', { local: { root: ['roots'] } });
    const result = runWs(['ls', '--config', file, '--json']);
    expect(result.status, result.stderr).toBe(0);
    expect(
      (JSON.parse(result.stdout) as { resources: { name: string }[] }).resources.map((item) => item.name),
    ).toEqual([join(scratch, 'roots', 'w', '.ws-Zz9999.tmp')]);
  });

  const bad: [string, unknown, RegExp][] = [
    ['not JSON', '{"backend": ', /--config \S+bad-0\.json: not JSON/],
    ['not an object', '[1, 2]', /expected a JSON object of settings/],
    ['an unknown setting', { imagee: 'x' }, /unknown setting "imagee"/],
    [
      'a setting of another backend in a section',
      { local: { image: 'x' } },
      /"image" does not apply to the local backend/,
    ],
    ['an unknown backend', { backend: 'vm' }, /unknown backend "vm"/],
    ['a value of the wrong type', { skill: 3 }, /"skill" must be a path or a list of paths/],
    ['a memory size that is no size', { memory: 'lots' }, /"memory" takes a size in MiB/],
    ['a network name for a backend without', { e2b: { network: 'bridge' } }, /"network" takes none or full/],
    [
      'both workdir and volume',
      { docker: { workdir: 'a', volume: 'b' } },
      /"workdir" and "volume" exclude each other/,
    ],
  ];
  it.each(bad.map(([label, settings, message], index) => [label, index, settings, message] as const))(
    'a config file with %s is one line and exit 2',
    async (_label, index, settings, message) => {
      const file = await config(`bad-${index}.json`, settings);
      const result = runWs(['exec', '--backend', 'docker', '--config', file, '--', 'true']);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    },
  );

  it('a missing config file named by WS_CONFIG is one line and exit 2', () => {
    const result = runWs(['ls'], { WS_CONFIG: join(scratch, 'nope.json') });
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(`ws: WS_CONFIG ${join(scratch, 'nope.json')}: ENOENT\n`);
  });
});

/** A TCP server that accepts connections and never answers: a backend that hangs. */
async function blackHole(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Runs a command to completion without blocking this process (the black hole lives here). */
function run(
  command: string,
  args: string[],
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('close', (status) => {
      clearTimeout(killer);
      resolve({ status, stdout, stderr });
    });
  });
}

const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
const noScript = (() => {
  try {
    execFileSync('script', ['-qec', 'true', '/dev/null'], { stdio: 'ignore', timeout: 10_000 });
    return undefined;
  } catch (error) {
    return `script(1) cannot give a command a terminal here: ${(error as Error).message.split('\n')[0]}`;
  }
})();
if (noScript) console.log(`skipping the terminal progress case: ${noScript}`);

describe('ws: a backend that never answers', () => {
  let hole: Awaited<ReturnType<typeof blackHole>>;
  beforeAll(async () => {
    hole = await blackHole();
  });
  afterAll(async () => {
    await hole.close();
  });
  const lsArgs = () => [
    'ls',
    '--backend',
    'e2b',
    '--api-url',
    hole.url,
    '--api-key',
    'e2b_0000',
    '--timeout',
    '1s',
  ];

  it('ws ls gives up after --timeout with one line, and nothing else on a pipe', async () => {
    const result = await run(process.execPath, [BIN, ...lsArgs()]);
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe('ws ls: the e2b backend did not finish within 1s (see --timeout)\n');
  });

  it('ws exec gives up opening after --start-timeout and exits by itself', async () => {
    const result = await run(process.execPath, [
      BIN,
      'exec',
      '--backend',
      'e2b',
      '--api-url',
      hole.url,
      '--api-key',
      'e2b_0000',
      '--start-timeout',
      '1s',
      '--',
      'true',
    ]);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('ws: opening the e2b workspace took longer than 1s\n');
  });

  it.skipIf(noScript !== undefined)('on a terminal, shows the step while it runs and erases it', async () => {
    const command = [process.execPath, BIN, ...lsArgs()].map(quote).join(' ');
    const result = await run('script', ['-qec', command, '/dev/null']);
    // The line is rewritten in place (carriage return, erase line), then erased before the error.
    const erase = '\r\u001b[K';
    expect(result.stdout).toMatch(/. ws: looking through the e2b backend's sandboxes… 0\.\ds/);
    expect(result.stdout.split(erase).length).toBeGreaterThan(3);
    expect(result.stdout).toContain(`${erase}ws ls: the e2b backend did not finish within 1s`);
  });
});
