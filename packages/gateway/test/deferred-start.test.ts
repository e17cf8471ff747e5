import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecOptions, ExecResult, Sandbox } from '@ws/core';
import { DEFERRED_GATEWAY_START, type GatewaySandbox, openRemoteGateway } from '@ws/core/gateway';
import { LocalSandbox } from '@ws/local/sandbox';
import { afterAll, describe, expect, it } from 'vitest';

// A remote backend's gateway, as `openRemoteGateway` sets it up, over a host folder standing in for
// the sandbox: the direct way is a LocalSandbox whose commands are counted, the gateway runs on this
// host's node over its stdin and stdout.
const bundlePath = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'gateway.mjs');
const root = mkdtempSync(join(tmpdir(), 'ws-gateway-deferred-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A direct sandbox that counts its commands and may refuse to find node (`nodeless`). */
function countingDirect(name: string, nodeless = false) {
  const workdir = join(root, name, 'work');
  mkdirSync(workdir, { recursive: true });
  const host = new LocalSandbox({ workdir });
  const commands: string[] = [];
  const direct: Sandbox = Object.assign(Object.create(host) as Sandbox, {
    backend: 'remote-test',
    // As a vendor's API: files read, written and looked at, the rest through commands.
    capabilities: { ...host.capabilities, list: false, remove: false, mkdir: false, rename: false },
    exec(argv: readonly string[], options?: ExecOptions): Promise<ExecResult> {
      commands.push(argv.join(' '));
      const script = argv.join(' ');
      if (nodeless && /command -v node|uname -m/.test(script))
        return host.exec(['sh', '-c', 'exit 1'], options);
      return host.exec(argv, options);
    },
  });
  return { direct, commands, workdir, home: join(root, name, 'home'), spawned: [] as number[] };
}

async function open(name: string, nodeless = false, directOutput: 'bytes' | 'text' = 'bytes') {
  if (!existsSync(bundlePath)) throw new Error(`${bundlePath} is missing: build @ws/gateway first`);
  const fixture = countingDirect(name, nodeless);
  const warnings: string[] = [];
  const host = new LocalSandbox({ workdir: fixture.workdir });
  const opened = await openRemoteGateway(
    {
      direct: fixture.direct,
      start: async (argv) => {
        const started = await host.spawn(argv, { cwd: fixture.workdir });
        fixture.spawned.push(started.pid ?? -1);
        return started;
      },
      home: fixture.home,
      workdir: fixture.workdir,
      bundle: async () => new Uint8Array(readFileSync(bundlePath)),
      via: 'the test API',
      withoutGateway: 'commands and files go through the test API directly, and MCP servers cannot run',
      describe: 'the test sandbox',
      directOutput,
    },
    {},
    warnings,
  );
  return { ...fixture, ...opened, warnings };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('a remote gateway, started once the workspace is in use', () => {
  it('starts nothing at the opening; the first calls go direct, and the gateway starts once the calls pause', async () => {
    const remote = await open('idle');
    try {
      expect(remote.spawned, 'opening starts no process in the sandbox').toEqual([]);
      const { sandbox } = remote.session;
      const first = await sandbox.exec(['sh', '-c', 'echo first']);
      expect(first.stdoutText).toBe('first\n');
      await sandbox.writeFile(`${remote.workdir}/a.txt`, 'one');
      expect(remote.commands.some((command) => command.includes('echo first'))).toBe(true);
      expect(remote.spawned).toEqual([]);
      // No call for the idle time: the gateway starts in the background, and answers the next calls.
      await until(() => remote.link.client !== undefined, 'the gateway to start');
      expect(remote.spawned).toHaveLength(1);
      const before = remote.commands.length;
      const later = await sandbox.exec(['sh', '-c', 'echo later']);
      expect(later.stdoutText).toBe('later\n');
      expect(new TextDecoder().decode(await sandbox.readFile(`${remote.workdir}/a.txt`))).toBe('one');
      expect(remote.commands.length, 'calls go through the gateway once it runs').toBe(before);
      expect(remote.warnings).toEqual([]);
    } finally {
      await remote.link.stop();
    }
  });

  it(`starts it after ${DEFERRED_GATEWAY_START.afterCalls} calls without a pause, while the calls go on directly`, async () => {
    const remote = await open('busy');
    try {
      const { sandbox } = remote.session;
      for (let call = 0; call < DEFERRED_GATEWAY_START.afterCalls - 1; call++) await sandbox.exec(['true']);
      expect(remote.spawned).toEqual([]);
      expect(remote.link.isStarting).toBe(false);
      await sandbox.exec(['true']);
      expect(remote.link.isStarting || remote.link.client !== undefined).toBe(true);
      // Calls made while it starts are not held up: they go direct.
      const during = await sandbox.exec(['sh', '-c', 'echo during']);
      expect(during.stdoutText).toBe('during\n');
      await until(() => remote.link.client !== undefined, 'the gateway to start');
    } finally {
      await remote.link.stop();
    }
  });

  it('makes the directories asked for together in one command while it has not started', async () => {
    const remote = await open('layout');
    try {
      const sandbox = remote.session.sandbox as GatewaySandbox;
      const paths = ['a/b', 'c', 'd/e/f'].map((path) => `${remote.workdir}/${path}`);
      await Promise.all(paths.map((path) => sandbox.mkdir(path, { recursive: true })));
      expect(remote.commands.filter((command) => command.includes('mkdir -p'))).toHaveLength(1);
      for (const path of paths) expect(existsSync(path)).toBe(true);
      // One that fails goes alone again and gets its own error; the others are made.
      await sandbox.writeFile(`${remote.workdir}/file`, 'x');
      const outcomes = await Promise.allSettled(
        [`${remote.workdir}/file`, `${remote.workdir}/g`].map((path) =>
          sandbox.mkdir(path, { recursive: true }),
        ),
      );
      expect(outcomes[0]?.status).toBe('rejected');
      expect(outcomes[1]?.status).toBe('fulfilled');
      expect(existsSync(`${remote.workdir}/g`)).toBe(true);
    } finally {
      await remote.link.stop();
    }
  });

  it('in a sandbox where no node can run: says so once, MCP calls fail naming why, and calls go on directly', async () => {
    const remote = await open('nodeless', true);
    try {
      const { sandbox, mcp } = remote.session;
      if (!mcp) throw new Error('no MCP connector');
      expect(remote.session.noMcp).toBeUndefined();
      await sandbox.exec(['true']);
      await until(() => remote.session.noMcp !== undefined, 'the probe to find no node');
      expect(remote.session.noMcp).toMatch(/the test sandbox has no node 18 or newer/);
      await expect(
        mcp.connect(
          { name: 'x', transport: { type: 'stdio', command: 'true', args: [] } } as never,
          { agentId: '', sessionId: '', key: '' } as never,
        ),
      ).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
      const still = await sandbox.exec(['sh', '-c', 'echo direct']);
      expect(still.stdoutText).toBe('direct\n');
      expect(remote.spawned).toEqual([]);
      expect(remote.warnings).toHaveLength(1);
      expect(remote.warnings[0]).toMatch(/Meanwhile commands and files go through the test API directly/);
    } finally {
      await remote.link.stop();
    }
  });

  it('where the vendor hands command output over as text: starts at the opening, files go direct meanwhile, commands wait for it', async () => {
    const remote = await open('text', false, 'text');
    try {
      expect(remote.link.isStarting).toBe(true);
      const { sandbox } = remote.session;
      await sandbox.writeFile(`${remote.workdir}/b.txt`, 'two');
      const counted = remote.commands.length;
      // Bytes that are not UTF-8 come back as they are: the command ran in the gateway.
      const binary = await sandbox.exec(['sh', '-c', "printf '\\377\\376ok'"]);
      expect([...binary.stdout]).toEqual([0xff, 0xfe, 0x6f, 0x6b]);
      expect(remote.link.client).toBeDefined();
      expect(remote.spawned).toHaveLength(1);
      expect(
        remote.commands.slice(counted).some((command) => command.includes('printf')),
        'the command did not go direct',
      ).toBe(false);
    } finally {
      await remote.link.stop();
    }
  });

  it('a workspace closed before the gateway started leaves nothing running', async () => {
    const remote = await open('closed');
    await remote.session.sandbox.exec(['true']);
    await remote.link.stop();
    await sleep(DEFERRED_GATEWAY_START.afterIdleMs + 200);
    expect(remote.spawned).toEqual([]);
    expect(remote.warnings).toEqual([]);
  });
});
