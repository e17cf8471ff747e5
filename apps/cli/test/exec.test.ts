import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, dockerUnavailable, runWs } from './helpers.js';

beforeAll(assertBuilt);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-exec-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

const SCRIPT = 'echo out; echo err >&2; exit 3';

describe('ws exec --backend local', () => {
  it('prints both streams apart and passes the exit code through', () => {
    const result = runWs(['exec', '--', 'sh', '-c', SCRIPT]);
    expect(result).toEqual({ status: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it("prints why a command could not start on stderr, exit 127 (the shell's message)", () => {
    const result = runWs(['exec', '--', 'no-such-cmd-ws']);
    expect(result).toEqual({ status: 127, stdout: '', stderr: 'no-such-cmd-ws: command not found\n' });
  });

  it('passes arguments verbatim and runs in --workdir, which persists', async () => {
    const workdir = join(scratch, 'persist');
    const result = runWs([
      'exec',
      '--workdir',
      workdir,
      '--',
      'sh',
      '-c',
      'printf "[%s]" "$@" > args.txt',
      'sh',
      'a b',
      '$HOME',
      '*',
    ]);
    expect(result.status).toBe(0);
    expect(await readFile(join(workdir, 'args.txt'), 'utf8')).toBe('[a b][$HOME][*]');
  });

  it('--json prints the result as one object', () => {
    const result = runWs(['exec', '--json', '--', 'sh', '-c', SCRIPT]);
    expect(result.status).toBe(3);
    expect(JSON.parse(result.stdout)).toMatchObject({
      exitCode: 3,
      stdout: 'out\n',
      stderr: 'err\n',
      timedOut: false,
    });
  });

  it('--timeout kills the command and exits 124', () => {
    const result = runWs(['exec', '--timeout', '300ms', '--', 'sh', '-c', 'sleep 60']);
    expect(result.status).toBe(124);
    expect(result.stderr).toMatch(/timed out/);
  });

  it('-i passes stdin to the command', async () => {
    const child = spawn(process.execPath, [BIN, 'exec', '-i', '--', 'tr', 'a-z', 'A-Z'], { stdio: 'pipe' });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stdin.end('piped text\n');
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(stdout).toBe('PIPED TEXT\n');
  });

  it('streams output while the command runs', async () => {
    const workdir = join(scratch, 'stream');
    const child = spawn(
      process.execPath,
      [
        BIN,
        'exec',
        '--workdir',
        workdir,
        '--',
        'sh',
        '-c',
        'echo first; while [ ! -f go ]; do sleep 0.05; done; echo second',
      ],
      { stdio: 'pipe' },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let stdout = '';
    // The command prints "second" only once "go" exists, and "go" is created only after "first" has
    // been seen: output held back until the end would never get there (the test would time out).
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('first\n')) resolve();
      }),
    );
    await writeFile(join(workdir, 'go'), '');
    expect(await exited).toBe(0);
    expect(stdout).toBe('first\nsecond\n');
  });

  it('--network none is refused by the local backend, with its CAPABILITY_UNSUPPORTED message', () => {
    const result = runWs(['exec', '--backend', 'local', '--network', 'none', '--', 'true']);
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      /^ws: CAPABILITY_UNSUPPORTED: The local backend cannot enforce network: 'none'/,
    );
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

const noDocker = dockerUnavailable();
if (noDocker) console.log(`skipping ws exec --backend docker: ${noDocker}`);

describe.skipIf(noDocker !== undefined)('ws exec --backend docker', () => {
  it("sh -c 'echo out; echo err >&2; exit 3' prints both streams and exits 3", () => {
    const result = runWs(['exec', '--backend', 'docker', '--', 'sh', '-c', SCRIPT]);
    expect(result).toEqual({ status: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it('--network none leaves the command the loopback interface only', () => {
    const result = runWs(['exec', '--backend', 'docker', '--network', 'none', '--', 'cat', '/proc/net/dev']);
    expect(result.status, result.stderr).toBe(0);
    // Two header lines, then one "name: counters" line per interface.
    const interfaces = result.stdout
      .trim()
      .split('\n')
      .slice(2)
      .map((line) => line.split(':')[0]?.trim());
    expect(interfaces).toEqual(['lo']);
  });

  it('--network-allow is refused by the docker backend with its CAPABILITY_UNSUPPORTED message', () => {
    const result = runWs(['exec', '--backend', 'docker', '--network-allow', '10.0.0.0/8', '--', 'true']);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^ws: CAPABILITY_UNSUPPORTED: The docker backend cannot enforce an allow list: .*network: "none"/i,
    );
  });
});
