import { randomBytes } from 'node:crypto';
import { isWsError } from '@ws/core';
import { expect } from 'vitest';
import { makeTar, skillMarkdown } from '../archives.js';
import { conformanceCase, expectWsError } from '../harness.js';
import { stdioSpec, uploadMcpFixtures } from '../mcp-fixtures.js';
import {
  filled,
  gatewayServer,
  isFilled,
  mayHaveRun,
  requireBoundary,
  workspaceOpener,
  writeInKilledProcess,
  writeLongEnough,
} from '../security-support.js';
import { describe } from '../suite.js';
import type { AreaContext } from '../target.js';

// Counts its runs in $1, then kills every gateway it can see and waits, printing nothing: where
// commands run through the gateway, the connection breaks while the command runs.
const COUNT_AND_KILL_GATEWAY = `echo run >> "$1"
for p in /proc/[0-9]*; do
  case "$(tr '\\0' ' ' < "$p/cmdline" 2>/dev/null)" in *gateway-*.mjs*) kill -9 "\${p#/proc/}" 2>/dev/null;; esac
done
sleep 1`;

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Nothing torn, nothing run twice, nothing that freezes the process; every failure typed. */
export function securityIntegrityArea(context: AreaContext): void {
  describe('security: integrity', { decidedBy: 'engine' }, () => {
    const open = workspaceOpener(context);

    conformanceCase(
      context,
      'security.exec-never-replayed',
      'a command whose gateway dies while it runs runs once: the call fails saying it may have run, or returns',
      async (test) => {
        const workspace = await open();
        // The command kills every gateway it can see: only inside a sandbox is that only its own.
        requireBoundary(workspace, test);
        const sandbox = workspace.getSandbox();
        const counter = `.ws-security/runs-${randomBytes(4).toString('hex')}`;
        await sandbox.mkdir('.ws-security', { recursive: true });
        try {
          await sandbox.exec(['sh', '-c', COUNT_AND_KILL_GATEWAY, 'sh', counter], { timeoutMs: 30_000 });
        } catch (error) {
          expect(isWsError(error, 'BACKEND_UNAVAILABLE'), String(error)).toBe(true);
          expect(mayHaveRun(error)).toBe(true);
        }
        expect(decode(await sandbox.readFile(counter))).toBe('run\n');
        // The workspace goes on working (the gateway is relaunched, or commands go direct).
        expect((await sandbox.exec(['sh', '-c', 'echo alive'])).stdoutText).toBe('alive\n');
      },
      { decidedBy: 'gateway', takes: ['gateway'] },
    );

    conformanceCase(
      context,
      'security.write-never-torn-by-gateway-death',
      'a write whose gateway dies midway leaves the old file or the new one, never a torn or empty one',
      async (test) => {
        const workspace = await open();
        const server = await gatewayServer(workspace, test);
        const sandbox = workspace.getSandbox();
        const path = '.ws-security/replaced.bin';
        const { size, ms } = await writeLongEnough(sandbox, path, 0x41, context.largeFileBytes);
        let current = 0x41;
        // The gateway dies early, midway and late in a write.
        const delays = [0.05, 0.35, 0.7].map((at) => Math.max(5, Math.round(at * ms)));
        for (const [round, delayMs] of delays.entries()) {
          const next = 0x42 + round;
          await server.callTool('kill-gateway', { ms: delayMs }).catch(() => {});
          let written = true;
          try {
            await sandbox.writeFile(path, filled(size, next));
          } catch (error) {
            written = false;
            expect(isWsError(error, 'BACKEND_UNAVAILABLE'), String(error)).toBe(true);
            expect(mayHaveRun(error)).toBe(true);
          }
          // Let the scheduled kill land before reading, so the read is not caught by it too.
          await new Promise((resolve) => setTimeout(resolve, delayMs + 200));
          const bytes = await sandbox.readFile(path);
          const whole = isFilled(bytes, size, next) || (!written && isFilled(bytes, size, current));
          expect(whole, `round ${round}: ${bytes.byteLength} bytes, first ${bytes[0]}`).toBe(true);
          if (isFilled(bytes, size, next)) current = next;
        }
      },
      { timeoutMs: 120_000, decidedBy: 'gateway', takes: ['gateway'] },
    );

    conformanceCase(
      context,
      'security.write-never-torn-by-host-death',
      'a write whose host process is killed midway leaves the old file or the new one, never a torn one',
      async (test) => {
        const workspaceId = context.newId();
        const workspace = await open(workspaceId);
        const sandbox = workspace.getSandbox();
        const path = '.ws-security/host-killed.bin';
        const { size, ms } = await writeLongEnough(sandbox, path, 0x41, context.largeFileBytes);
        let current = 0x41;
        // The host process dies early, midway and late in a write.
        const delays = [0.1, 0.45, 0.8].map((at) => Math.max(20, Math.round(at * ms)));
        for (const [round, killAfterMs] of delays.entries()) {
          const next = 0x42 + round;
          await writeInKilledProcess(
            context,
            test,
            workspaceId,
            `${workspace.workdir}/${path}`,
            size,
            next,
            killAfterMs,
          );
          // Work the killed process handed to the sandbox may still be finishing.
          await new Promise((resolve) => setTimeout(resolve, 500));
          const bytes = await sandbox.readFile(path);
          const whole = isFilled(bytes, size, next) || isFilled(bytes, size, current);
          expect(whole, `round ${round}: ${bytes.byteLength} bytes, first ${bytes[0]}`).toBe(true);
          if (isFilled(bytes, size, next)) current = next;
        }
      },
      { timeoutMs: 180_000, decidedBy: 'backend' },
    );

    conformanceCase(
      context,
      'security.archive-link-chains',
      'refuses archives whose links leave the destination only once earlier links are followed, or loop',
      async () => {
        const workspace = await open();
        const skill = { path: 'SKILL.md', content: skillMarkdown('chain', 'A skill with hostile links') };
        const hostile = [
          // up leads to the root; "up/../../../etc/passwd" looks inside as text, but climbs out from there.
          [skill, { path: 'd1/d2/up', link: '../..' }, { path: 'esc', link: 'd1/d2/up/../../../etc/passwd' }],
          // a link through a link: l2 is fine alone, l1/.. is not what it seems.
          [
            skill,
            { path: 'a/l1', link: '../b' },
            { path: 'b/x', content: 'x' },
            { path: 'a/l2', link: 'l1/../../..' },
          ],
          // a loop.
          [skill, { path: 'l1', link: 'l2' }, { path: 'l2', link: 'l1' }],
          // inside the archive, but outside the skill's own folder.
          [
            { path: 'skill/SKILL.md', content: skill.content },
            { path: 'other/secret.txt', content: 'secret' },
            { path: 'skill/peek', link: '../other/secret.txt' },
          ],
        ];
        for (const [index, entries] of hostile.entries()) {
          const agentId = `chain-${index}`;
          await expectWsError(
            () => workspace.addSkill({ format: 'tar', data: makeTar(entries) }, { agentId }),
            'INVALID_ARGUMENT',
          );
          expect(await workspace.listSkills({ agentId })).toEqual([]);
        }
      },
    );

    conformanceCase(
      context,
      'security.glob-bombs',
      'a backtracking glob or a brace bomb neither freezes the process nor crashes it, with and without ripgrep',
      async () => {
        for (const searchMode of ['posix', 'ripgrep'] as const) {
          const workspace = await open(undefined, { searchMode });
          const sandbox = workspace.getSandbox();
          const dir = `${workspace.workdir}/.ws-security/glob`;
          await sandbox.writeFile(`${dir}/${'a'.repeat(60)}`, 'needle\n');
          const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
          // Linear matching answers at once; a backtracking one would not finish within the case's time.
          const bomb = `${'*a'.repeat(14)}*b`;
          {
            const glob = await tools.Glob!.call({ pattern: bomb, path: dir });
            expect(glob.content[0]).toMatchObject({ text: expect.stringContaining('No files found') });
            const grep = await tools.Grep!.call({ pattern: 'needle', path: dir, glob: bomb });
            expect(grep.isError ?? false).toBe(false);
            const braces = await tools.Glob!.call({ pattern: '{'.repeat(5_000), path: dir });
            expect(braces.isError).toBe(true);
            const long = await tools.Glob!.call({ pattern: 'a'.repeat(100_000), path: dir });
            expect(long.isError).toBe(true);
          }
        }
      },
    );

    conformanceCase(
      context,
      'security.mcp-reconnects',
      'an MCP stdio server that exits is started again on the next call; one that dies mid-call is not called twice',
      async (test) => {
        const workspace = await open();
        if (!workspace.capabilities.mcp)
          test.skip(`the ${workspace.capabilities.backend} workspace runs no MCP servers here`);
        await uploadMcpFixtures(workspace.getSandbox(), workspace.workdir);
        await workspace.addMcp(stdioSpec('fragile'), { agentId: 'fragile' });
        const [client] = await workspace.listMcps({ agentId: 'fragile' });
        const counter = async () => {
          const result = await client!.callTool('counter', {});
          return (result.content[0] as { text: string }).text;
        };
        expect(await counter()).toBe('1');
        expect(await counter()).toBe('2');
        // The server answers, then exits: the next call finds it gone before sending and starts it again.
        await client!.callTool('exit', {});
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(await counter()).toBe('1');
        // The server dies during a call: that call fails saying it may have run, the next one works.
        let failure: unknown;
        try {
          await client!.callTool('sh', { script: 'kill -9 $PPID; sleep 5' });
        } catch (error) {
          failure = error;
        }
        expect(isWsError(failure, 'BACKEND_UNAVAILABLE'), String(failure)).toBe(true);
        expect(mayHaveRun(failure)).toBe(true);
        expect(await counter()).toBe('1');
      },
      { decidedBy: 'gateway' },
    );

    conformanceCase(
      context,
      'security.stale-locks',
      "appends are not held up by a killed writer's lock",
      async () => {
        const workspace = await open();
        const sandbox = workspace.getSandbox();
        const session = `${workspace.workdir}/sessions/locked`;
        await sandbox.mkdir(session, { recursive: true });
        // What a writer killed inside the lock left behind: a lock folder, and a kernel lock it held.
        await sandbox.mkdir(`${session}/context.jsonl.lock`, { recursive: true });
        await sandbox.exec([
          'sh',
          '-c',
          'command -v flock >/dev/null || exit 0; exec 9<"$1"; flock 9 && kill -9 $$',
          'sh',
          session,
        ]);
        await workspace.offloadContext('locked', [{ role: 'user', content: 'after the crash' }]);
        expect(decode(await sandbox.readFile(`${session}/context.jsonl`))).toContain('after the crash');
      },
      20_000,
    );

    conformanceCase(
      context,
      'security.gateway-body-cap',
      'the gateway refuses a request body past its limit instead of buffering it, and goes on working',
      async (test) => {
        const workspace = await open();
        const server = await gatewayServer(workspace, test);
        await expectWsError(
          () => server.callTool('echo', { text: 'x'.repeat(80 * 1024 * 1024) }),
          'LIMIT_EXCEEDED',
        );
        const echoed = await server.callTool('echo', { text: 'still here' });
        expect(echoed.content[0]).toMatchObject({ text: 'still here' });
      },
      { timeoutMs: 90_000, decidedBy: 'gateway', takes: ['gateway'] },
    );

    conformanceCase(
      context,
      'security.typed-failures',
      'an aborted read and a message JSON cannot hold fail with a WsError',
      async () => {
        const workspace = await open();
        const sandbox = workspace.getSandbox();
        await sandbox.writeFile('.ws-security/stream.bin', filled(8 * 1024 * 1024, 0x43));
        const controller = new AbortController();
        let failure: unknown;
        try {
          const stream = await sandbox.readStream('.ws-security/stream.bin', {
            signal: controller.signal,
            chunkSize: 64 * 1024,
          });
          for await (const _ of stream) controller.abort();
        } catch (error) {
          failure = error;
        }
        if (failure !== undefined) expect(isWsError(failure, 'ABORTED'), String(failure)).toBe(true);
        const circular: Record<string, unknown> = { role: 'user' };
        circular.self = circular;
        await expectWsError(() => workspace.offloadContext('typed', [circular]), 'INVALID_ARGUMENT');
        await expectWsError(() => workspace.offloadContext('typed', [{ count: 10n }]), 'INVALID_ARGUMENT');
      },
      { decidedBy: 'backend' },
    );
  });
}
