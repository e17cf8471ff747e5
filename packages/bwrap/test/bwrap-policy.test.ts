import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { isWsError, type WsError } from '@ws/core';
import { hostTag } from '@ws/core/backend';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { cgroupScope, findCgroupLayout, parseCgroupMounts } from '../src/bwrap-cgroup.js';
import { bwrapPolicy, capabilityArguments } from '../src/bwrap-policy.js';
import {
  BubblewrapWorkspace,
  type BubblewrapWorkspaceOptions,
  bubblewrapProblem,
  gcBwrap,
} from '../src/index.js';

const problem = requireEngine('bubblewrap', bubblewrapProblem());
const root = process.getuid?.() === 0;
const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-policy-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function thrown(run: () => unknown): WsError {
  try {
    run();
  } catch (error) {
    if (isWsError(error)) return error;
    throw error;
  }
  throw new Error('did not throw');
}

const build = (options: BubblewrapWorkspaceOptions) => () => new BubblewrapWorkspace(options);

describe('bubblewrap policy options', () => {
  it('refuses malformed limits, network, privileges and shareNet with INVALID_ARGUMENT', () => {
    for (const options of [
      { limits: { pids: 0 } },
      { limits: { memoryMiB: 1.5 } },
      { limits: { cpus: -1 } },
      { limits: { disk: 10 } },
      { limits: 'small' },
      { network: 'some' },
      { network: { allow: ['not a host!'] } },
      { privileges: 'root' },
      { shareNet: 'yes' },
    ] as unknown as BubblewrapWorkspaceOptions[])
      expect(thrown(build(options)).code, JSON.stringify(options)).toBe('INVALID_ARGUMENT');
  });

  it('refuses shareNet and network that disagree; takes them when they agree', () => {
    for (const options of [
      { shareNet: true, network: 'none' },
      { shareNet: false, network: 'full' },
      { shareNet: true, network: { allow: [] } },
    ] as BubblewrapWorkspaceOptions[]) {
      const error = thrown(build(options));
      expect(error.code, JSON.stringify(options)).toBe('INVALID_ARGUMENT');
      expect(error.message).toMatch(/disagree/);
    }
    expect(bwrapPolicy({ shareNet: true, network: 'full' }).shareNet).toBe(true);
    expect(bwrapPolicy({ shareNet: false, network: 'none' }).shareNet).toBe(false);
    expect(bwrapPolicy({ shareNet: false }).shareNet).toBe(false);
    expect(bwrapPolicy({ network: 'none' }).shareNet).toBe(false);
    // Defaults: the host's network, no capabilities.
    expect(bwrapPolicy({})).toMatchObject({ shareNet: true, privileges: 'hardened' });
  });

  it('refuses a disk limit and allow lists with CAPABILITY_UNSUPPORTED in the constructor', () => {
    for (const [options, named] of [
      [{ limits: { diskMiB: 100 } }, /limits\.diskMiB/],
      [{ network: { allow: ['10.0.0.0/8'] } }, /allow list/],
      [{ network: { allow: ['registry.npmjs.org'] } }, /allow list of host names/],
    ] as const) {
      const error = thrown(build(options as BubblewrapWorkspaceOptions));
      expect(error.code, JSON.stringify(options)).toBe('CAPABILITY_UNSUPPORTED');
      expect(error.message).toMatch(/The bubblewrap backend cannot enforce/);
      expect(error.message).toMatch(named);
    }
  });

  it("refuses privileges: 'standard' when the host process is not root", () => {
    const uid = vi.spyOn(process, 'getuid').mockReturnValue(1000);
    try {
      const error = thrown(build({ privileges: 'standard' }));
      expect(error.code).toBe('CAPABILITY_UNSUPPORTED');
      expect(error.message).toMatch(/not root/);
      expect(bwrapPolicy({ privileges: 'hardened' }).privileges).toBe('hardened');
    } finally {
      uid.mockRestore();
    }
    if (root) expect(bwrapPolicy({ privileges: 'standard' }).privileges).toBe('standard');
  });

  it("drops every capability when hardened, and keeps Docker's default set (no CAP_SYS_ADMIN) when standard", () => {
    expect(capabilityArguments('hardened')).toEqual(['--cap-drop', 'ALL']);
    const standard = capabilityArguments('standard');
    expect(standard.slice(0, 2)).toEqual(['--cap-drop', 'ALL']);
    expect(standard).toContain('CAP_CHOWN');
    expect(standard).not.toContain('CAP_SYS_ADMIN');
  });
});

describe('bubblewrap policy: cgroup hierarchies', () => {
  const none = () => [] as string[];
  it('finds the cgroup v1 hierarchy of each controller, co-mounted ones included', () => {
    const mounts = [
      'tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0',
      'cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0',
      'cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0',
      'cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0',
      'cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0',
    ].join('\n');
    expect(parseCgroupMounts(mounts, none)).toEqual({
      version: 1,
      mounts: {
        pids: '/sys/fs/cgroup/pids',
        memory: '/sys/fs/cgroup/memory',
        cpu: '/sys/fs/cgroup/cpu,cpuacct',
      },
      readOnly: [],
    });
  });

  it('takes the unified hierarchy when it has the controllers (cgroup v2), and tells a read-only one', () => {
    const v2 = 'cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0';
    expect(parseCgroupMounts(v2, () => ['cpuset', 'cpu', 'io', 'memory', 'pids'])).toEqual({
      version: 2,
      mounts: { pids: '/sys/fs/cgroup', memory: '/sys/fs/cgroup', cpu: '/sys/fs/cgroup' },
      readOnly: [],
    });
    expect(parseCgroupMounts(v2.replace('rw,', 'ro,'), () => ['pids'])?.readOnly).toEqual(['/sys/fs/cgroup']);
    expect(parseCgroupMounts('proc /proc proc rw 0 0', none)).toBeUndefined();
  });

  it('reports why there are no cgroups to use', async () => {
    const found = await findCgroupLayout(join(base, 'no-mounts'));
    expect('problem' in found && found.problem).toMatch(/no cgroup hierarchy/);
  });
});

/** The runtime folder of the workspaces of this file, whose tag starts their cgroups' names. */
const runtimeDir = join(base, 'runtime');

/** The workspace cgroup folders of an id, as the host sees them. */
function cgroupsOf(workspaceId: string): string[] {
  const parents = ['pids', 'memory', 'cpu', 'unified', '.'].map((hierarchy) =>
    join('/sys/fs/cgroup', hierarchy, 'ws'),
  );
  return [...new Set(parents.filter((parent) => existsSync(parent)))].flatMap((parent) =>
    readdirSync(parent)
      .filter((name) => name.startsWith(`${cgroupScope(runtimeDir)}-${hostTag(workspaceId)}-`))
      .map((name) => join(parent, name)),
  );
}

const controllerFolder = (folders: string[], controller: string) =>
  folders.find(
    (folder) => existsSync(join(folder, `${controller}.max`)) || folder.includes(`/${controller}/`),
  );

describe.skipIf(problem !== undefined || !root)('bubblewrap policy: cgroups (root)', () => {
  const open = (workspaceId: string, options: BubblewrapWorkspaceOptions = {}) =>
    BubblewrapWorkspace.open({
      workspaceId,
      hostWorkdir: join(base, workspaceId),
      hostRuntimeDir: runtimeDir,
      gateway: false,
      ...options,
    });

  it('puts every command in a cgroup of the workspace with its limits, and removes it at close', async () => {
    const workspace = await open('limited', { limits: { pids: 100, memoryMiB: 128, cpus: 0.5 } });
    expect(workspace.warnings).toEqual([]);
    const folders = cgroupsOf('limited');
    expect(folders.length).toBeGreaterThan(0);
    const read = (controller: string, v1: string, v2: string) => {
      const folder = controllerFolder(folders, controller) ?? (folders[0] as string);
      return readFileSync(join(folder, existsSync(join(folder, v2)) ? v2 : v1), 'utf8').trim();
    };
    expect(read('pids', 'pids.max', 'pids.max')).toBe('100');
    expect(read('memory', 'memory.limit_in_bytes', 'memory.max')).toBe(String(128 * 1024 * 1024));
    expect(read('cpu', 'cpu.cfs_quota_us', 'cpu.max')).toMatch(/^50000( 100000)?$/);
    // A running command is in every folder, as the host sees it.
    const sleeper = await workspace.getSandbox().spawn(['sleep', '30']);
    for (const folder of folders)
      await vi.waitFor(() => expect(readFileSync(join(folder, 'cgroup.procs'), 'utf8').trim()).not.toBe(''));
    await sleeper.kill();
    await workspace.close();
    expect(cgroupsOf('limited')).toEqual([]);
  });

  it('sets the default process limit when no limits are given', async () => {
    const workspace = await open('default-pids');
    const folder = controllerFolder(cgroupsOf('default-pids'), 'pids') as string;
    expect(readFileSync(join(folder, 'pids.max'), 'utf8').trim()).toBe('2048');
    await workspace.close();
  });

  it('keeps the sandbox away from its cgroup: no /sys, no cgroup mount, the limit unchanged', async () => {
    for (const privileges of ['hardened', 'standard'] as const) {
      const workspace = await open(`escape-${privileges}`, { limits: { pids: 64 }, privileges });
      const attempt = await workspace.getSandbox().exec([
        '/bin/sh',
        '-c',
        `ls /sys/fs/cgroup 2>/dev/null && echo sees-cgroups
mkdir -p /tmp/cg && mount -t cgroup -o pids none /tmp/cg 2>/dev/null && echo mounted-v1
mount -t cgroup2 none /tmp/cg 2>/dev/null && echo mounted-v2
for f in /proc/1/root/sys/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/pids/cgroup.procs /sys/fs/cgroup/cgroup.procs; do
  echo $$ > "$f" 2>/dev/null && echo "moved-by-$f"; done
echo done`,
      ]);
      expect(attempt.stdoutText, privileges).toBe('done\n');
      const folder = controllerFolder(cgroupsOf(`escape-${privileges}`), 'pids') as string;
      expect(readFileSync(join(folder, 'pids.max'), 'utf8').trim()).toBe('64');
      await workspace.close();
    }
  });

  it("gives 'standard' root Docker's capabilities but not CAP_SYS_ADMIN: the read-only system stays read-only", async () => {
    const workspace = await open('standard', { privileges: 'standard' });
    const result = await workspace
      .getSandbox()
      .exec([
        '/bin/sh',
        '-c',
        'id -u; mount -o remount,bind,rw /usr 2>/dev/null && echo remounted; touch /usr/ws-probe 2>/dev/null && echo wrote; true',
      ]);
    expect(result.stdoutText).toBe('0\n');
    expect(existsSync('/usr/ws-probe')).toBe(false);
    await workspace.close();
  });

  it('a cgroup left by a killed process does not block the next open of the id, which removes it', async () => {
    const pids =
      (readdirSync('/sys/fs/cgroup').includes('pids') ? '/sys/fs/cgroup/pids' : '/sys/fs/cgroup') + '/ws';
    mkdirSync(pids, { recursive: true });
    // A pid no process has (above the kernel's pid_max).
    const left = join(pids, `${cgroupScope(runtimeDir)}-${hostTag('reopened')}-99999999-abcdef`);
    mkdirSync(left);
    try {
      const workspace = await open('reopened');
      expect(existsSync(left)).toBe(false);
      expect((await workspace.getSandbox().exec(['echo', 'works'])).stdoutText).toBe('works\n');
      await workspace.close();
    } finally {
      if (existsSync(left)) rmdirSync(left);
    }
    expect(cgroupsOf('reopened')).toEqual([]);
  });

  it('gcBwrap reaps a cgroup whose process is gone and keeps those of live workspaces', async () => {
    const pids =
      (readdirSync('/sys/fs/cgroup').includes('pids') ? '/sys/fs/cgroup/pids' : '/sys/fs/cgroup') + '/ws';
    const left = join(pids, `${cgroupScope(runtimeDir)}-${hostTag('gc-dead')}-99999998-abcdef`);
    // Dead too, but of another runtime folder: a reaper of this one leaves it alone.
    const elsewhere = join(pids, `${cgroupScope(join(base, 'other'))}-${hostTag('gc-dead')}-99999998-abcdef`);
    mkdirSync(left, { recursive: true });
    mkdirSync(elsewhere, { recursive: true });
    const live = await open('gc-live');
    try {
      const tmp = join(base, 'gc-tmp');
      mkdirSync(tmp, { recursive: true });
      const report = await gcBwrap({ olderThanMs: 0, hostRuntimeDir: runtimeDir, tmpDir: tmp });
      expect(report.removed.map((resource) => resource.name)).toContain(left);
      expect(report.removed.find((resource) => resource.name === left)?.kind).toBe('cgroup');
      for (const folder of cgroupsOf('gc-live'))
        expect(report.kept.find((resource) => resource.name === folder)?.reason).toBe('in-use');
      expect(existsSync(left)).toBe(false);
      expect(existsSync(elsewhere)).toBe(true);
      expect(report.removed.map((resource) => resource.name)).not.toContain(elsewhere);
    } finally {
      for (const folder of [left, elsewhere]) if (existsSync(folder)) rmdirSync(folder);
      await live.close();
    }
  });
});
