import { describe, expect, it } from 'vitest';
import {
  checkPackages,
  formatPackageRecord,
  missingPackages,
  packageRecordPath,
  parsePackageRecord,
  specProblem,
} from '../src/backend/packages.js';
import { createExecResult, type Provider, type ProviderSession, WorkspaceEngine } from '../src/backend.js';
import { type ExecOptions, isWsError, type Sandbox, WsError } from '../src/index.js';

function refusal(action: () => unknown): WsError {
  try {
    action();
  } catch (error) {
    if (isWsError(error)) return error;
    throw error;
  }
  throw new Error('expected a WsError');
}

describe('packages: spec validation', () => {
  it('takes names, versions, paths and URLs as they are', () => {
    for (const spec of ['jq', 'jq=1.6-2', '/tmp/x.deb', 'requests==2.31', './a b.whl', '@scope/x@^1', 'x;y'])
      expect(specProblem(spec), spec).toBeUndefined();
    expect(checkPackages({ npm: ['typescript', 'typescript'], apt: ['jq'] })).toEqual({
      apt: ['jq'],
      pip: [],
      npm: ['typescript'],
      timeoutMs: 600_000,
    });
  });

  it('is nothing to do when no list has a spec', () => {
    expect(checkPackages(undefined)).toBeUndefined();
    expect(checkPackages({})).toBeUndefined();
    expect(checkPackages({ npm: [], timeoutMs: 5 })).toBeUndefined();
  });

  it('refuses installer flags, newlines and NUL with INVALID_ARGUMENT naming the spec', () => {
    for (const [installer, spec] of [
      ['npm', '--prefix=/etc'],
      ['pip', '-r/etc/shadow'],
      ['apt', '-oAPT::Get::AllowUnauthenticated=1'],
      ['apt', 'jq\nrm -rf /'],
      ['pip', 'x\0y'],
      ['npm', 'x\r'],
      ['npm', ''],
      ['npm', '   '],
    ] as const) {
      const error = refusal(() => checkPackages({ [installer]: [spec] }));
      expect(error.code, JSON.stringify(spec)).toBe('INVALID_ARGUMENT');
      expect(error.message).toContain(JSON.stringify(spec));
      expect(error.details).toMatchObject({ option: `packages.${installer}`, spec });
    }
  });

  it('refuses a malformed option: not an object, an unknown key, a list that is not strings, a bad timeout', () => {
    for (const value of [
      'jq',
      ['jq'],
      null,
      { yum: ['jq'] },
      { npm: 'typescript' },
      { npm: [1] },
      { npm: ['x'], timeoutMs: 0 },
      { npm: ['x'], timeoutMs: 1.5 },
      { npm: ['x'], timeoutMs: '10' },
      { npm: Array.from({ length: 1001 }, (_, index) => `p${index}`) },
    ])
      expect(refusal(() => checkPackages(value)).code, JSON.stringify(value)?.slice(0, 60)).toBe(
        'INVALID_ARGUMENT',
      );
  });
});

describe('packages: the record', () => {
  const lists = { apt: ['jq'], pip: [], npm: ['/tmp/x.tgz', 'typescript@5'] };

  it('reads back what it wrote, in any order of specs', () => {
    expect(parsePackageRecord(formatPackageRecord(lists))).toEqual(lists);
    const reordered = formatPackageRecord({ ...lists, npm: ['typescript@5', '/tmp/x.tgz'] });
    expect(JSON.parse(reordered).hash).toBe(JSON.parse(formatPackageRecord(lists)).hash);
  });

  it('treats anything but a well-formed record as no record, and never throws', () => {
    const good = JSON.parse(formatPackageRecord(lists));
    const hostile: unknown[] = [
      '',
      'not json',
      'null',
      '[]',
      '"text"',
      '{}',
      JSON.stringify({ ...good, version: 2 }),
      JSON.stringify({ ...good, hash: 5 }),
      JSON.stringify({ ...good, installed: null }),
      JSON.stringify({ ...good, installed: { ...good.installed, npm: 'x' } }),
      JSON.stringify({ ...good, installed: { ...good.installed, pip: undefined } }),
      JSON.stringify({ ...good, installed: { ...good.installed, npm: [{}] } }),
      // Edited lists no longer match the hash.
      JSON.stringify({ ...good, installed: { ...good.installed, npm: ['left-pad'] } }),
      // A spec the option would refuse, with a matching hash.
      formatPackageRecord({ ...lists, npm: ['--prefix=/'] }),
      '{"__proto__": {"polluted": true}, "version": 1}',
      `${'['.repeat(100_000)}`,
    ];
    for (const text of hostile)
      expect(parsePackageRecord(text as string), String(text).slice(0, 60)).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('installs only the specs the record lacks', () => {
    expect(missingPackages(lists, lists)).toEqual({ apt: [], pip: [], npm: [] });
    expect(missingPackages({ ...lists, npm: ['typescript@5', 'left-pad'] }, lists)).toEqual({
      apt: [],
      pip: [],
      npm: ['left-pad'],
    });
    expect(missingPackages(lists, undefined)).toEqual(lists);
  });

  it('lives outside the workdir, one per workspace id', () => {
    expect(packageRecordPath('abc')).toBe('/var/tmp/ws-packages-abc.json');
  });
});

/**
 * A sandbox that answers each installer as `answers` says, keeps files written through the record's
 * `mv` in memory, and records every command: the engine's install, on its own, apart from a backend
 * (the backends run the conformance area `packages`).
 */
class InstallProvider implements Provider {
  readonly backend = 'recording';
  readonly description = 'recording';
  readonly expectedWorkdir = '/work';
  readonly persistent = true;
  readonly isolation = 'container' as const;
  readonly mcp = false;
  closes = 0;
  commands: { argv: string[]; env: Record<string, string> }[] = [];
  files = new Map<string, string>();
  answers: Record<
    string,
    (argv: readonly string[]) => { exitCode: number; output?: string; timedOut?: boolean }
  > = {};

  async open(): Promise<ProviderSession> {
    const sandbox: Sandbox = {
      backend: 'recording',
      workdir: '/work',
      capabilities: {
        stat: false,
        list: false,
        remove: false,
        mkdir: false,
        rename: false,
        readStream: false,
        writeStream: false,
        spawn: false,
      },
      exec: async (argv: readonly string[], options: ExecOptions = {}) => {
        this.commands.push({ argv: [...argv], env: { ...options.env } });
        const script = argv[2] ?? '';
        if (argv[0] === '/bin/sh' && script.includes('mv -f')) {
          const target = /mv -f "\$t" (\S+)/.exec(script)?.[1] ?? '';
          this.files.set(target, String(options.stdin));
          return createExecResult({ exitCode: 0 });
        }
        const answer = this.answers[argv[0] ?? '']?.(argv) ?? { exitCode: 0 };
        if (answer.output) await options.onStderr?.(new TextEncoder().encode(answer.output));
        return createExecResult({ exitCode: answer.exitCode, timedOut: answer.timedOut ?? false });
      },
      readFile: async (path: string) => {
        const text = this.files.get(path);
        if (text === undefined) throw new WsError('NOT_FOUND', `${path} is missing`);
        return new TextEncoder().encode(text);
      },
      async writeFile() {},
    };
    return { sandbox, workdir: '/work' };
  }

  installs(): string[][] {
    return this.commands
      .map((command) => command.argv)
      .filter((argv) => ['apt-get', 'python3', 'npm'].includes(argv[0] ?? ''));
  }

  async close(): Promise<void> {
    this.closes++;
  }

  async destroy(): Promise<void> {}
}

describe('packages: the engine installs them at open', () => {
  const packages = { apt: ['jq'], pip: ['requests==2.31'], npm: ['/tmp/x.tgz'] };

  it('runs apt, pip, npm in that order, each spec one argv element after --, then skips on re-attach', async () => {
    const provider = new InstallProvider();
    const first = new WorkspaceEngine({ provider, workspaceId: 'p1', packages });
    await first.initialize();
    expect(provider.installs()).toEqual([
      ['apt-get', 'install', '-y', '--no-install-recommends', '--', 'jq'],
      [
        'python3',
        '-m',
        'pip',
        'install',
        '--no-input',
        '--disable-pip-version-check',
        '--',
        'requests==2.31',
      ],
      ['npm', 'install', '--global', '--no-audit', '--no-fund', '--', '/tmp/x.tgz'],
    ]);
    expect(provider.commands.find((command) => command.argv[0] === 'apt-get')?.env).toEqual({
      DEBIAN_FRONTEND: 'noninteractive',
    });
    expect(first.warnings).toEqual([]);
    await first.close();

    // The same sandbox (the provider keeps its files): nothing again; a new spec alone.
    provider.commands = [];
    const again = new WorkspaceEngine({ provider, workspaceId: 'p1', packages });
    await again.initialize();
    expect(provider.installs()).toEqual([]);
    await again.close();
    const more = new WorkspaceEngine({
      provider,
      workspaceId: 'p1',
      packages: { ...packages, npm: ['/tmp/x.tgz', 'left-pad'] },
    });
    await more.initialize();
    expect(provider.installs()).toEqual([
      ['npm', 'install', '--global', '--no-audit', '--no-fund', '--', 'left-pad'],
    ]);
    await more.close();
  });

  it('installs again, with a warning, over a record the agent spoiled', async () => {
    const provider = new InstallProvider();
    provider.files.set(packageRecordPath('p2'), '{"version":1,"hash":"x","installed":{}}');
    const workspace = new WorkspaceEngine({ provider, workspaceId: 'p2', packages });
    await workspace.initialize();
    expect(provider.installs()).toHaveLength(3);
    expect(workspace.warnings.join('\n')).toMatch(/not a valid record/);
    expect(parsePackageRecord(provider.files.get(packageRecordPath('p2')) ?? '')).toEqual(
      missingPackages(packages, undefined),
    );
    await workspace.close();
  });

  it('runs apt-get update and tries again when apt cannot locate a package', async () => {
    const provider = new InstallProvider();
    let tries = 0;
    provider.answers['apt-get'] = (argv) =>
      argv[1] === 'install' && ++tries === 1
        ? { exitCode: 100, output: 'E: Unable to locate package jq\n' }
        : { exitCode: 0 };
    const workspace = new WorkspaceEngine({ provider, workspaceId: 'p3', packages: { apt: ['jq'] } });
    await workspace.initialize();
    expect(provider.installs().map((argv) => argv.slice(0, 2).join(' '))).toEqual([
      'apt-get install',
      'apt-get update',
      'apt-get install',
    ]);
    await workspace.close();
  });

  it('says what apt needs when it may not switch users (a hardened sandbox)', async () => {
    const provider = new InstallProvider();
    provider.answers['apt-get'] = () => ({
      exitCode: 100,
      output: 'E: setgroups 65534 failed - setgroups (1: Operation not permitted)\n',
    });
    const workspace = new WorkspaceEngine({ provider, workspaceId: 'p8', packages: { apt: ['jq'] } });
    const error = await workspace.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isWsError(error, 'PACKAGE_INSTALL_FAILED')).toBe(true);
    expect((error as Error).message).toContain("privileges: 'standard'");
  });

  it('fails the open with PACKAGE_INSTALL_FAILED naming the installer, the specs and the output, records nothing and closes the provider', async () => {
    const provider = new InstallProvider();
    const noise = 'x'.repeat(10_000);
    provider.answers.npm = () => ({ exitCode: 1, output: `${noise}\nnpm error ENOENT: /tmp/none.tgz\n` });
    const workspace = new WorkspaceEngine({ provider, workspaceId: 'p4', packages });
    const error = await workspace.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isWsError(error, 'PACKAGE_INSTALL_FAILED')).toBe(true);
    const failure = error as WsError;
    expect(failure.message).toContain('npm /tmp/x.tgz');
    expect(failure.message).toContain('npm error ENOENT: /tmp/none.tgz');
    expect(failure.message.length).toBeLessThan(2_400);
    expect(failure.details).toMatchObject({ installer: 'npm', packages: ['/tmp/x.tgz'], exitCode: 1 });
    expect(String(failure.details?.outputTail).length).toBeLessThanOrEqual(2_048);
    expect(provider.files.has(packageRecordPath('p4'))).toBe(false);
    expect(provider.closes).toBe(1);
    expect(workspace.state).toBe('created');
  });

  it('fails with TIMEOUT, the same details, when an installer runs past timeoutMs or no time is left', async () => {
    const provider = new InstallProvider();
    provider.answers.npm = () => ({ exitCode: -1, timedOut: true, output: 'fetching…' });
    const workspace = new WorkspaceEngine({ provider, workspaceId: 'p7', packages: { npm: ['x'] } });
    const error = await workspace.initialize().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isWsError(error, 'TIMEOUT'), String(error)).toBe(true);
    expect((error as WsError).message).toMatch(/npm x\) ran past packages.timeoutMs \(600000 ms\)/);
    expect((error as WsError).details).toMatchObject({ installer: 'npm', packages: ['x'], exitCode: -1 });
    expect(provider.closes).toBe(1);
  });

  it('says an installer is missing (exit 127) and checks the specs at construction', async () => {
    const provider = new InstallProvider();
    provider.answers.python3 = () => ({ exitCode: 127, output: 'sh: python3: not found' });
    const workspace = new WorkspaceEngine({ provider, workspaceId: 'p5', packages: { pip: ['x'] } });
    await expect(workspace.initialize()).rejects.toThrow(/python3 is not installed in the sandbox/);
    expect(
      refusal(() => new WorkspaceEngine({ provider, workspaceId: 'p6', packages: { npm: ['--global'] } }))
        .code,
    ).toBe('INVALID_ARGUMENT');
  });
});
