import { randomBytes } from 'node:crypto';
import type { SandboxPolicyOptions } from '@ws/core';
import { DEFAULT_PIDS_LIMIT } from '@ws/core/backend';
import { expect } from 'vitest';
import { errorText, okText, toolNamed } from '../fixtures.js';
import { conformanceCase, expectWsError } from '../harness.js';
import { afterAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

/** One option of each kind the policy area asks for, by the name the support table uses. */
const ASKS: readonly { readonly need: string; readonly options: SandboxPolicyOptions }[] = [
  { need: 'limits.cpus', options: { limits: { cpus: 1 } } },
  { need: 'limits.memoryMiB', options: { limits: { memoryMiB: 512 } } },
  { need: 'limits.pids', options: { limits: { pids: 512 } } },
  { need: 'limits.diskMiB', options: { limits: { diskMiB: 2048 } } },
  { need: 'network.none', options: { network: 'none' } },
  { need: 'network.full', options: { network: 'full' } },
  { need: 'network.allow-cidr', options: { network: { allow: ['10.11.12.0/24'] } } },
  { need: 'network.allow-host', options: { network: { allow: ['registry.npmjs.org'] } } },
  { need: 'privileges.hardened', options: { privileges: 'hardened' } },
  { need: 'privileges.standard', options: { privileges: 'standard' } },
];

/**
 * Forks `count` copies of a shell under a name of its own, each blocked reading a FIFO nothing writes
 * (a fork without an exec: cheap, so the case measures the limit, not the machine), from a parent that
 * stops at the first fork that fails; then kills every copy it finds (builtins only: nothing more to
 * fork) and prints how many there were.
 */
function bombScript(count: number): string {
  const name = `wsbomb${randomBytes(4).toString('hex')}`;
  return `cp "$(command -v sh)" "./${name}" && mkfifo "./${name}.fifo" || exit 3
"./${name}" -c 'exec 3<>"$1"; i=0; while [ $i -lt ${count} ]; do read -r _ <&3 & i=$((i+1)); done' sh "./${name}.fifo" >/dev/null 2>&1
n=0
for p in /proc/[0-9]*; do c=; read -r c < "$p/comm" 2>/dev/null
  if [ "$c" = ${name} ]; then kill -9 "\${p#/proc/}" 2>/dev/null && n=$((n+1)); fi; done
rm -f "./${name}" "./${name}.fifo"
echo "started=$n"`;
}

/** Runs the bomb in `workspace` and returns how many copies were running at once. */
async function bomb(workspace: WorkspaceUnderTest, count: number): Promise<number> {
  const result = await workspace
    .getSandbox()
    .exec(['/bin/sh', '-c', bombScript(count)], { cwd: workspace.workdir, timeoutMs: 110_000 });
  const started = /started=(\d+)/.exec(result.stdoutText);
  expect(started, `exit ${result.exitCode}: ${result.stdoutText}${result.stderrText}`).not.toBeNull();
  return Number(started?.[1]);
}

async function expectNextCommandWorks(workspace: WorkspaceUnderTest): Promise<void> {
  const next = await workspace.getSandbox().exec(['/bin/sh', '-c', 'echo next'], { timeoutMs: 30_000 });
  expect(next.stdoutText.trim(), next.stderrText).toBe('next');
}

/**
 * `limits`, `network` and `privileges`: each one the backend declares it enforces holds in a sandbox
 * (a process bomb stops at the limit, memory past the limit is reported as such, no network leaves
 * the loopback interface alone); each other one is refused at open with `CAPABILITY_UNSUPPORTED`.
 */
export function policyArea(context: AreaContext): void {
  const support = context.target.policy;
  if (!support) return;
  const supports = (need: string): boolean => {
    const [kind, value] = need.split('.') as [keyof typeof support, string];
    const list = support[kind];
    return Array.isArray(list) && (list as readonly string[]).includes(value);
  };

  const created: WorkspaceUnderTest[] = [];
  const open = async (options: SandboxPolicyOptions = {}, workspaceId = context.newId()) => {
    if (!support.create) return context.create(workspaceId, options);
    const workspace = await support.create({ ...options, workspaceId });
    created.push(workspace);
    return workspace;
  };
  /** The sandbox's network interfaces, from /proc/net/dev. */
  const interfaces = async (workspace: WorkspaceUnderTest): Promise<string[]> => {
    const devices = await workspace
      .getSandbox()
      .exec(['/bin/sh', '-c', 'cat /proc/net/dev'], { timeoutMs: 30_000 });
    expect(devices.exitCode, devices.stderrText).toBe(0);
    return devices.stdoutText
      .split('\n')
      .slice(2)
      .map((line) => line.split(':')[0]?.trim() ?? '')
      .filter((name) => name);
  };

  describe('policy', { decidedBy: 'backend' }, () => {
    afterAll(async () => {
      await Promise.allSettled(created.map((workspace) => workspace.close()));
    }, context.caseTimeoutMs);

    conformanceCase(
      context,
      'policy.refused',
      'refuses at open, with CAPABILITY_UNSUPPORTED, every limit, network policy and privilege setting it cannot enforce',
      async () => {
        for (const ask of ASKS.filter((candidate) => !supports(candidate.need))) {
          const workspaceId = context.newId();
          const error = await expectWsError(async () => {
            const workspace = await open(ask.options, workspaceId);
            await workspace.initialize();
          }, 'CAPABILITY_UNSUPPORTED');
          expect(error.message, ask.need).toMatch(/cannot enforce/);
          // Refused before anything was created.
          if (context.target.leftovers)
            expect(await context.target.leftovers(workspaceId), ask.need).toEqual([]);
        }
      },
      context.caseTimeoutMs * 2,
    );

    conformanceCase(
      context,
      'policy.pids',
      'a process bomb stops at limits.pids; the next command works',
      async (test) => {
        if (!supports('limits.pids')) return test.skip('the backend has no process limit');
        const workspace = await open({ limits: { pids: 64 } });
        await workspace.initialize();
        const started = await bomb(workspace, 300);
        expect(started).toBeGreaterThan(8);
        expect(started).toBeLessThanOrEqual(64);
        await expectNextCommandWorks(workspace);
        await workspace.close();
      },
    );

    conformanceCase(
      context,
      'policy.pids-default',
      `a process bomb in a workspace opened with no limits stops at ${DEFAULT_PIDS_LIMIT} processes; the next command works`,
      async (test) => {
        if (!support.defaultPids) return test.skip('the backend sets no process limit by default');
        const workspace = await open();
        await workspace.initialize();
        const started = await bomb(workspace, DEFAULT_PIDS_LIMIT + 400);
        expect(started).toBeGreaterThan(DEFAULT_PIDS_LIMIT / 2);
        expect(started).toBeLessThanOrEqual(DEFAULT_PIDS_LIMIT);
        await expectNextCommandWorks(workspace);
        await workspace.close();
      },
      Math.max(context.caseTimeoutMs, 180_000),
    );

    conformanceCase(
      context,
      'policy.memory',
      'a command past limits.memoryMiB is killed and Bash says it ran out of memory; the next command works',
      async (test) => {
        if (!supports('limits.memoryMiB')) return test.skip('the backend has no memory limit');
        const workspace = await open({ limits: { memoryMiB: 256 } });
        await workspace.initialize();
        const bash = await toolNamed(workspace, 'Bash');
        // The shell keeps what the substitution reads: 640 MiB, well past the limit.
        const result = await bash.call({
          command: `x=$(head -c 671088640 /dev/zero | tr '\\0' a); echo "kept \${#x}"`,
          timeout: 100_000,
        });
        const text = errorText(result);
        expect(text).not.toContain('kept 671088640');
        expect(text).toContain('out of memory');
        expect(result.metadata?.outOfMemory).toBe(true);
        expect(okText(await bash.call({ command: 'echo after' })).trim()).toBe('after');
        await workspace.close();
      },
      Math.max(context.caseTimeoutMs, 150_000),
    );

    conformanceCase(
      context,
      'policy.no-network',
      "network: 'none' leaves the sandbox the loopback interface alone; files and commands still work",
      async (test) => {
        if (!supports('network.none')) return test.skip("the backend cannot enforce network: 'none'");
        // The control: a sandbox of the backend's ordinary network has more than loopback.
        const control = await open(supports('network.full') ? { network: 'full' } : {});
        await control.initialize();
        const ordinary = await interfaces(control);
        await control.close();
        expect(
          ordinary,
          'a sandbox with a network to lose (see ConformanceTarget.policy.create)',
        ).not.toEqual(['lo']);
        const workspace = await open({ network: 'none' });
        await workspace.initialize();
        const sandbox = workspace.getSandbox();
        expect(await interfaces(workspace)).toEqual(['lo']);
        const file = `${workspace.workdir}/offline.txt`;
        await sandbox.writeFile(file, new TextEncoder().encode('still here'));
        expect(new TextDecoder().decode(await sandbox.readFile(file))).toBe('still here');
        await workspace.close();
      },
    );

    conformanceCase(
      context,
      'policy.privileges',
      "privileges: 'hardened' leaves commands no capability; 'standard' lets the sandbox's user act as root",
      async (test) => {
        const hardened = supports('privileges.hardened');
        const standard = supports('privileges.standard');
        if (!hardened && !standard) return test.skip('the backend has no privilege setting');
        // The user, its effective capabilities, and whether it may use sudo without a password.
        const probe = `echo "uid=$(id -u)"; grep CapEff /proc/self/status | tr -d ' \\t'; sudo -n true 2>/dev/null && echo sudo=yes; true`;
        const run = async (privileges: 'hardened' | 'standard') => {
          const workspace = await open({ privileges });
          await workspace.initialize();
          const result = await workspace.getSandbox().exec(['/bin/sh', '-c', probe], { timeoutMs: 30_000 });
          await workspace.close();
          return result.stdoutText;
        };
        if (hardened) {
          const seen = await run('hardened');
          expect(seen).toContain('CapEff:0000000000000000');
          expect(seen).not.toContain('sudo=yes');
        }
        if (standard) {
          const seen = await run('standard');
          const rootWithPower = seen.includes('uid=0') && !seen.includes('CapEff:0000000000000000');
          expect(rootWithPower || seen.includes('sudo=yes'), seen).toBe(true);
        }
      },
    );
  });
}
