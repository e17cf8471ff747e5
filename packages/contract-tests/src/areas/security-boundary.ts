import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWsError } from '@ws/core';
import { expect } from 'vitest';
import { conformanceCase } from '../harness.js';
import {
  gatewayServer,
  hostileServer,
  requireBoundary,
  shInGateway,
  shInSandbox,
  workspaceOpener,
} from '../security-support.js';
import { describe } from '../suite.js';
import type { AreaContext } from '../target.js';

const NO_CAPABILITIES = '0000000000000000';

// Reports the effective capabilities, then tries to make the read-only system writable and to write
// into it, and to change a kernel setting. $1: a file name under /usr that must not appear on the host.
const ESCAPE_SCRIPT = `grep CapEff /proc/self/status
mount -o remount,rw,bind /usr >/dev/null 2>&1 && echo REMOUNTED
mount -o remount,rw / >/dev/null 2>&1 && echo REMOUNTED-ROOT
touch "/usr/$1" 2>/dev/null
cat /proc/sys/kernel/core_uses_pid > /proc/sys/kernel/core_uses_pid 2>/dev/null && echo WROTE-SYSCTL
true`;

// Plants, in every folder the sandbox can write that the host may also touch, links to the host's
// canary files under the names a backend might use there: existing entries of the runtime folders
// are replaced, the workdir and /tmp get the fixed names. $1: canary file, $2: canary socket.
const PLANT_SCRIPT = `txt=$1 sock=$2
plant() { case "$2" in *.sock) t=$sock;; *) t=$txt;; esac
  rm -rf -- "$1/$2.ws-plant" 2>/dev/null; ln -s "$t" "$1/$2.ws-plant" 2>/dev/null && mv -fT -- "$1/$2.ws-plant" "$1/$2" 2>/dev/null; }
names="node.json gateway.log gateway.sock gateway.pid token lease.pid users sockets shared"
for d in /ws/run /ws /run/ws; do
  [ -d "$d" ] && [ -w "$d" ] || continue
  for n in $(ls -A "$d" 2>/dev/null) $names; do plant "$d" "$n"; done
done
for d in "$PWD" /tmp; do for n in $names; do plant "$d" "$n"; done; done
true`;

// For a few seconds, replaces every socket that appears in the runtime folder with a link to the
// canary socket, racing whatever the host does with it. $1: canary socket.
const RELINK_SCRIPT = `( end=$(( $(date +%s) + 5 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    for s in /ws/run/*.sock; do [ -S "$s" ] && ln -sfn "$1" "$s.x" && mv -fT "$s.x" "$s"; done
  done ) >/dev/null 2>&1 </dev/null &
true`;

/** The canary: a host file and a host socket that count every touch of the host through a planted link. */
async function canary(): Promise<{
  text: string;
  file: string;
  socket: string;
  connections: () => number;
  close: () => Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'ws-canary-'));
  const text = `CANARY-${randomBytes(8).toString('hex')}`;
  const file = join(dir, 'canary.txt');
  writeFileSync(file, text);
  const socket = join(dir, 'canary.sock');
  let connections = 0;
  const server = createServer((connection) => {
    connections++;
    connection.destroy();
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    text,
    file,
    socket,
    connections: () => connections,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The boundary against a hostile agent: capabilities, the host's files, links, /proc, other sandboxes. */
export function securityBoundaryArea(context: AreaContext): void {
  describe('security: boundary', { decidedBy: 'backend' }, () => {
    const open = workspaceOpener(context);

    conformanceCase(
      context,
      'security.no-capabilities',
      'commands and MCP servers run with no capabilities: the system stays read-only and sysctls unwritable',
      async (test) => {
        const workspace = await open();
        requireBoundary(workspace, test);
        const probe = `.ws-probe-${randomBytes(6).toString('hex')}`;
        const check = (output: string, where: string) => {
          expect(/CapEff:\s*([0-9a-f]+)/.exec(output)?.[1], `${where}: ${output}`).toBe(NO_CAPABILITIES);
          expect(output, where).not.toContain('REMOUNTED');
          expect(output, where).not.toContain('WROTE-SYSCTL');
          expect(existsSync(join('/usr', probe)), `${where} wrote into the host's /usr`).toBe(false);
        };
        check(await shInSandbox(workspace.getSandbox(), ESCAPE_SCRIPT, probe), 'a command');
        if (workspace.capabilities.mcp) {
          const server = await hostileServer(workspace, test);
          const script = ESCAPE_SCRIPT.replaceAll('"$1"', JSON.stringify(probe));
          check(await shInGateway(server, script), "an MCP server in the gateway's sandbox");
        }
      },
    );

    conformanceCase(
      context,
      'security.proc-isolated',
      "the host's processes are invisible inside: no command line of theirs in /proc",
      async (test) => {
        const workspace = await open();
        requireBoundary(workspace, test);
        // This test process's own script path: on the host, not in any sandbox.
        const marker = readFileSync('/proc/self/cmdline', 'utf8').split('\0')[1] ?? '';
        expect(marker.length).toBeGreaterThan(0);
        const script = `for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "$f" 2>/dev/null; echo; done`;
        expect(await shInSandbox(workspace.getSandbox(), script)).not.toContain(marker);
        if (workspace.capabilities.mcp) {
          const server = await hostileServer(workspace, test);
          expect(await shInGateway(server, script)).not.toContain(marker);
        }
      },
    );

    conformanceCase(
      context,
      'security.host-never-follows-links',
      'links planted in every folder the sandbox can write never lead the host to its own files or sockets',
      async (test) => {
        const workspaceId = context.newId();
        const first = await open(workspaceId);
        requireBoundary(first, test);
        const bait = await canary();
        const failures: string[] = [];
        const attempt = async (what: string, action: () => Promise<unknown>) => {
          try {
            await action();
          } catch (error) {
            // Failing safely is allowed; following a link is not (checked below).
            if (!isWsError(error)) throw error;
            failures.push(`${what}: ${error.message}`);
          }
        };
        try {
          const sandbox = first.getSandbox();
          await shInSandbox(sandbox, PLANT_SCRIPT, bait.file, bait.socket);
          if (first.capabilities.mcp) {
            const server = await hostileServer(first, test);
            await shInGateway(
              server,
              PLANT_SCRIPT.replace('txt=$1 sock=$2', `txt='${bait.file}' sock='${bait.socket}'`),
            );
            await shInGateway(server, RELINK_SCRIPT.replace('"$1"', `'${bait.socket}'`));
            // The gateway dies: the host relaunches it next to the planted links.
            await attempt('killing the gateway', () => server.callTool('kill-gateway', { ms: 0 }));
            await attempt('an MCP call after the kill', () => server.callTool('echo', { text: 'again' }));
          }
          // A second workspace object re-attaches to the same sandbox, works, and closes.
          // Opened without initializing, so that a refused start is one more failure to check.
          const second = await context.create(workspaceId);
          await attempt('opening a second object', () => second.initialize());
          await attempt('a command of the second object', () => second.getSandbox().exec(['true']));
          await attempt('a write of the second object', () =>
            second.getSandbox().writeFile('second.txt', 'second'),
          );
          await attempt('closing the second object', () => second.close());
          await attempt('a command after it', () => first.getSandbox().exec(['true']));
          await attempt('a read after it', () => first.getSandbox().readFile('second.txt'));
          await attempt('a tool call after it', async () => {
            const bash = (await first.listTools()).find((tool) => tool.name === 'Bash');
            await bash?.call({ command: 'echo ok' });
          });
          expect(readFileSync(bait.file, 'utf8')).toBe(bait.text);
          expect(bait.connections(), 'the host connected to a socket the sandbox linked to').toBe(0);
          for (const failure of failures) expect(failure).not.toContain(bait.text);
        } finally {
          await bait.close();
        }
      },
      90_000,
    );

    conformanceCase(
      context,
      'security.other-workspaces-invisible',
      "one workspace sees neither another's files nor its gateway's socket",
      async (test) => {
        const mine = await open();
        requireBoundary(mine, test);
        const theirs = await open();
        const marker = `marker-${randomBytes(6).toString('hex')}`;
        await theirs.getSandbox().writeFile(marker, 'theirs');
        const find = `find / -xdev \\( -path /proc -o -path /sys \\) -prune -o \\( -name '${marker}' -o -type s -name 'gateway-*' \\) -print 2>/dev/null; for d in /tmp /ws /ws/run /workspace /run; do [ -d "$d" ] && find "$d" \\( -name '${marker}' -o -type s -name 'gateway-*' \\) -print 2>/dev/null; done; true`;
        const seen = [await shInSandbox(mine.getSandbox(), find)];
        if (mine.capabilities.mcp) seen.push(await shInGateway(await hostileServer(mine, test), find));
        for (const output of seen) {
          expect(output).not.toContain(marker);
          // At most this workspace's own gateway socket, in its own runtime folder.
          const sockets = new Set(output.split('\n').filter((line) => /gateway-[^/]*$/.test(line)));
          expect(sockets.size, output).toBeLessThanOrEqual(1);
        }
      },
    );

    conformanceCase(
      context,
      'security.gateway-loopback-only',
      'the gateway listens on a socket or loopback only, never on an address others can reach',
      async (test) => {
        const workspace = await open();
        const server = await gatewayServer(workspace, test);
        const result = await server.callTool('gateway-listens', {});
        const addresses = (result.metadata?.structuredContent as { addresses?: string[] } | undefined)
          ?.addresses;
        expect(addresses, JSON.stringify(result.content)).toBeDefined();
        for (const address of addresses ?? []) {
          // /proc/net/tcp prints 127.0.0.1 as 0100007F (little-endian); tcp6 prints ::1 with a final 01.
          const [table, hex = ''] = address.split(':');
          const loopback = table === 'tcp' ? hex.endsWith('7F') : hex === '00000000000000000000000001000000';
          expect(loopback, `the gateway listens on ${address}`).toBe(true);
        }
      },
      { decidedBy: 'gateway', takes: ['gateway'] },
    );

    conformanceCase(
      context,
      'security.owners-apart',
      "a second owner's workspace of the same id never reaches the first's files, and its destroy leaves them",
      async (test) => {
        if (!context.target.owners) test.skip('the backend has no owner tags');
        const workspaceId = context.newId();
        const first = await context.create(workspaceId);
        const second = await context.create(workspaceId, { secondOwner: true });
        const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
        try {
          await first.initialize();
          await first.getSandbox().writeFile('first-owner.txt', 'first');
          // Either the second owner gets a workspace of its own, or it is refused with CONFLICT.
          const opened = await second.initialize().then(
            () => true,
            (error: unknown) => {
              expect(isWsError(error, 'CONFLICT'), String(error)).toBe(true);
              return false;
            },
          );
          if (opened) {
            expect(await second.getSandbox().exists('first-owner.txt')).toBe(false);
            await second.getSandbox().writeFile('second-owner.txt', 'second');
            expect(await first.getSandbox().exists('second-owner.txt')).toBe(false);
          }
          // Either it destroys its own, or it is refused with CONFLICT; the first's file stays.
          await second.destroy().catch((error: unknown) => {
            expect(isWsError(error, 'CONFLICT'), String(error)).toBe(true);
          });
          expect(text(await first.getSandbox().readFile('first-owner.txt'))).toBe('first');
          await first.close();
          if (!first.capabilities.persistent) return;
          // What the first owner keeps outlives the second's destroy: open again, the file is there.
          const again = await context.create(workspaceId);
          try {
            await again.initialize();
            expect(text(await again.getSandbox().readFile('first-owner.txt'))).toBe('first');
          } finally {
            await again.destroy();
          }
        } finally {
          await second.destroy().catch(() => {});
          await first.destroy().catch(() => {});
        }
      },
    );
  });
}
