import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, runWs } from './helpers.js';

beforeAll(assertBuilt);

const version = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

describe('ws: help and version', () => {
  it.each([['--version'], ['-v']])('%s prints the package version', (flag) => {
    const result = runWs([flag]);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(`${version}\n`);
  });

  it.each([
    ['--help'],
    ['serve', '--help'],
    ['exec', '--help'],
    ['ls', '--help'],
    ['gc', '--help'],
    ['demo', '--help'],
  ])('ws %s prints usage and exits 0', (...args) => {
    const result = runWs(args);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: ws/);
    expect(result.stderr).toBe('');
  });
});

describe('ws: bad input gives one line and a non-zero exit', () => {
  const cases: [string, string[], RegExp][] = [
    ['an unknown command', ['frobnicate'], /unknown command "frobnicate"/],
    ['an unknown top-level flag', ['--bogus'], /unknown option --bogus/],
    ['an unknown demo flag', ['demo', '--bogus'], /Unknown option '--bogus'/],
    ['an unknown serve flag', ['serve', '--bogus'], /Unknown option '--bogus'/],
    ['a flag without its value', ['serve', '--backend'], /--backend/],
    ['an unknown backend', ['serve', '--backend', 'nope'], /unknown backend "nope"/],
    ['a port that is not one', ['serve', '--http', 'eighty'], /--http takes a port/],
    ['a token on the command line', ['serve', '--http', '0', '--token', 'x'.repeat(32)], /set WS_TOKEN/],
    ['--token-file without --http', ['serve', '--token-file', '/etc/hostname'], /--http only/],
    ['a bad --max-sessions', ['serve', '--http', '0', '--max-sessions', '0'], /--max-sessions takes/],
    ['--stdio with --http', ['serve', '--stdio', '--http', '0'], /exclude each other/],
    ['a flag of another backend', ['serve', '--backend', 'local', '--image', 'x'], /--image does not apply/],
    ['an unreadable MCP config', ['serve', '--mcp-config', '/nonexistent/mcp.json'], /--mcp-config/],
    ['a bad --max-result-chars', ['serve', '--max-result-chars', '-5'], /--max-result-chars/],
    ['exec without a command', ['exec'], /no command given/],
    ['a bad duration', ['exec', '--timeout', 'soon', '--', 'true'], /--timeout takes a duration/],
    ['a bad --memory', ['exec', '--memory', 'lots', '--', 'true'], /^ws: --memory takes a size in MiB/],
    ['a bad --cpus', ['serve', '--cpus', '0'], /^ws: --cpus takes a number of CPUs/],
    ['a bad --pids', ['exec', '--pids', '4', '--', 'true'], /^ws: --pids: limits\.pids .*at least 8/],
    ['a bad --disk', ['serve', '--disk', '3X'], /^ws: --disk takes a size in MiB/],
    ['a bad --privileges', ['exec', '--privileges', 'root', '--', 'true'], /takes hardened or standard/],
    [
      'a network name on the local backend',
      ['exec', '--network', 'bridge', '--', 'true'],
      /^ws: --network takes none or full on the local backend/,
    ],
    [
      'a bad --network-allow entry',
      ['serve', '--network-allow', 'a.example.com,-x-'],
      /"-x-" is none of them/,
    ],
    [
      '--network with --network-allow',
      ['exec', '--network', 'none', '--network-allow', '10.0.0.0/8', '--', 'true'],
      /--network and --network-allow exclude each other/,
    ],
    [
      'a workdir under /proc (demo)',
      ['demo', '--workdir', '/proc/nope'],
      /cannot create the workdir \/proc\/nope/,
    ],
    [
      'a workdir under /proc (exec)',
      ['exec', '--workdir', '/proc/nope', '--', 'true'],
      /cannot create the workdir/,
    ],
    [
      'a workdir under /proc (serve)',
      ['serve', '--workdir', '/proc/nope/deeper'],
      /cannot create the workdir/,
    ],
    ['a workdir that is a file', ['exec', '--workdir', '/etc/hostname', '--', 'true'], /not a directory/],
    [
      'an owner tag on the local backend (serve)',
      ['serve', '--owner', 'me'],
      /--owner does not apply to the local/,
    ],
    ['an unknown ls flag', ['ls', '--bogus'], /Unknown option '--bogus' \(see ws ls --help\)/],
    [
      'a mistyped exec flag',
      ['exec', '--jsn', '--', 'true'],
      /Unknown option '--jsn'; did you mean --json\?/,
    ],
    ['a mistyped serve flag', ['serve', '--backnd', 'docker'], /did you mean --backend\?/],
    ['a mistyped command', ['exce', '--', 'true'], /unknown command "exce"; did you mean exec\?/],
    ['a mistyped top-level flag', ['--verison'], /unknown option --verison; did you mean --version\?/],
    ['a command nothing is near', ['deploy'], /unknown command "deploy" \(see ws --help\)/],
    ['ls on the local backend without a root', ['ls'], /--root DIR/],
    [
      'a root that does not exist',
      ['ls', '--root', '/nonexistent/ws-root'],
      /ws ls: The root \/nonexistent\/ws-root cannot be read/,
    ],
    [
      'an owner tag on the local backend (ls)',
      ['ls', '--owner', 'me'],
      /--owner does not apply to the local backend/,
    ],
    [
      'a root on the docker backend',
      ['gc', '--backend', 'docker', '--root', '/tmp'],
      /--root does not apply to the docker/,
    ],
    [
      'a workdir on the docker backend (ls)',
      ['ls', '--backend', 'docker', '--workdir', '/tmp'],
      /--workdir does not apply to ws ls/,
    ],
    ['a bad age', ['gc', '--older-than', 'soon'], /--older-than takes a duration/],
    ['a bad ls timeout', ['ls', '--timeout', '-1', '--root', '/tmp'], /--timeout/],
    ['a stray argument to gc', ['gc', 'now'], /ws gc: unexpected argument "now"/],
    ['a bad demo timeout', ['demo', '--timeout', 'later'], /--timeout takes a duration/],
    [
      'a config file that does not exist',
      ['exec', '--config', '/nonexistent/ws.json', '--', 'true'],
      /--config \/nonexistent\/ws\.json: ENOENT/,
    ],
  ];
  it.each(cases)('%s', (_label, args, message) => {
    const result = runWs(args);
    expect(result.status).not.toBe(0);
    expect(result.status).not.toBeNull(); // null: killed by the kill switch, so it hung
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('ws: a backend package that is not installed', () => {
  it('gives one line naming the npm package to install', () => {
    // An install of @ws/cli with its dependencies only: no optional backend package beside it.
    const root = mkdtempSync(join(tmpdir(), 'ws-cli-install-'));
    try {
      const here = fileURLToPath(new URL('..', import.meta.url));
      cpSync(dirname(BIN), join(root, 'dist'), { recursive: true });
      cpSync(join(here, 'package.json'), join(root, 'package.json'));
      for (const name of ['@ws/core', '@ws/local', '@modelcontextprotocol/sdk']) {
        mkdirSync(join(root, 'node_modules', name, '..'), { recursive: true });
        symlinkSync(realpathSync(join(here, 'node_modules', name)), join(root, 'node_modules', name));
      }
      const result = spawnSync(
        process.execPath,
        [join(root, 'dist', 'bin.js'), 'exec', '--backend', 'docker', '--', 'true'],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(result.status).toBe(2);
      expect(result.stderr).toBe(
        'ws: the docker backend needs the package @ws/docker: npm install @ws/docker\n',
      );
      const gc = spawnSync(process.execPath, [join(root, 'dist', 'bin.js'), 'gc', '--backend', 'k8s'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(gc.status).toBe(2);
      expect(gc.stderr).toBe('ws: the k8s backend needs the package @ws/k8s: npm install @ws/k8s\n');
      // The local backend, a dependency, still works from that install.
      const local = spawnSync(process.execPath, [join(root, 'dist', 'bin.js'), 'exec', '--', 'echo', 'ok'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(local.stdout).toBe('ok\n');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
