import { expect } from 'vitest';
import { openInChild } from '../child-workspace.js';
import { type CaseControls, conformanceCase, sleep } from '../harness.js';
import { stdioSpec, uploadMcpFixtures } from '../mcp-fixtures.js';
import { describe } from '../suite.js';
import type { AreaContext } from '../target.js';

// How long a process that closed its workspace may take to exit by itself.
const EXIT_LIMIT_MS = 20_000;

/**
 * Nothing left behind: a process that closes its workspace exits by itself; a process killed with
 * its workspace open is cleaned up after by the next object on its id; a closed workspace leaves no
 * process, container, socket or temporary folder.
 */
export function lifecycleLeftoversArea(context: AreaContext): void {
  const leftovers = (test: CaseControls) => {
    const look = context.target.leftovers;
    if (!look) test.skip('the target gives no way to look for what a workspace left (target.leftovers)');
    return look.bind(context.target);
  };

  /** Looks until nothing is left (processes end asynchronously) or `limitMs` pass; returns the last look. */
  const settled = async (look: (id: string) => Promise<string[]>, workspaceId: string, limitMs = 10_000) => {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const found = await look(workspaceId);
      if (found.length === 0 || Date.now() > deadline) return found;
      await sleep(200);
    }
  };

  describe('lifecycle: nothing left behind', { decidedBy: 'backend' }, () => {
    conformanceCase(
      context,
      'lifecycle.child-exits',
      'a process that opens a workspace, runs a command, reads a file and closes exits by itself',
      async (test) => {
        const look = leftovers(test);
        const workspaceId = context.newId();
        const child = openInChild(
          context,
          test,
          workspaceId,
          `const sandbox = workspace.getSandbox();
await sandbox.exec(['sh', '-c', 'echo ran > ran.txt']);
say(new TextDecoder().decode(await sandbox.readFile('ran.txt')).trim());
await workspace.close();
say('closed');`,
        );
        expect(await child.printed('closed'), child.stderr()).toBe(true);
        const code = await Promise.race([child.ended, sleep(EXIT_LIMIT_MS).then(() => 'still running')]);
        if (code === 'still running') child.kill('SIGKILL');
        expect(
          code,
          `the process did not exit within ${EXIT_LIMIT_MS} ms of close(): ${child.stderr()}`,
        ).toBe(0);
        expect(await settled(look, workspaceId)).toEqual([]);
      },
      EXIT_LIMIT_MS + 40_000,
    );

    conformanceCase(
      context,
      'lifecycle.killed-host',
      'a process killed with its workspace open: the next object on its id works, and its close leaves nothing',
      async (test) => {
        const look = leftovers(test);
        const workspaceId = context.newId();
        const child = openInChild(
          context,
          test,
          workspaceId,
          `await workspace.getSandbox().exec(['sh', '-c', 'echo from-the-killed > killed.txt']);
say('open');
await new Promise(() => {});`,
        );
        expect(await child.printed('open'), child.stderr()).toBe(true);
        child.kill('SIGKILL');
        await child.ended;
        const next = await context.create(workspaceId);
        await next.initialize();
        const sandbox = next.getSandbox();
        expect((await sandbox.exec(['sh', '-c', 'echo works'])).stdoutText).toBe('works\n');
        if (next.capabilities.persistent)
          expect(new TextDecoder().decode(await sandbox.readFile('killed.txt'))).toBe('from-the-killed\n');
        await next.close();
        expect(await settled(look, workspaceId)).toEqual([]);
      },
      90_000,
    );

    conformanceCase(
      context,
      'lifecycle.close-leaves-nothing',
      'after close(), no process a command, spawn or MCP server started, and no container, socket or temporary folder, remains',
      async (test) => {
        const look = leftovers(test);
        const workspaceId = context.newId();
        const workspace = await context.create(workspaceId);
        await workspace.initialize();
        const sandbox = workspace.getSandbox();
        // A command that leaves a process running in the background, as `npm run dev &` would.
        await sandbox.exec(['sh', '-c', 'sleep 600 >/dev/null 2>&1 & echo started'], { timeoutMs: 10_000 });
        if (sandbox.capabilities.spawn) await sandbox.spawn(['sleep', '600']);
        if (workspace.capabilities.mcp) {
          await uploadMcpFixtures(sandbox, workspace.workdir);
          await workspace.addMcp(stdioSpec('lingering'));
        }
        await workspace.close();
        expect(await settled(look, workspaceId)).toEqual([]);
      },
      90_000,
    );

    conformanceCase(
      context,
      'lifecycle.planted-record',
      'an attachment record the agent plants dated in the future does not keep the sandbox running after close()',
      async (test) => {
        const look = leftovers(test);
        const workspaceId = context.newId();
        const workspace = await context.create(workspaceId);
        await workspace.initialize();
        if (workspace.capabilities.isolation === 'none') {
          await workspace.close();
          test.skip('commands run on the host: there is no sandbox to keep');
        }
        const sandbox = workspace.getSandbox();
        // A hostile agent finds where the objects using its sandbox are recorded (a `.ws/attached`
        // folder in a home or /tmp), and plants a record of a user on another machine that looks fresh
        // until 2099.
        const found = await sandbox.exec(
          [
            'sh',
            '-c',
            'for d in "$HOME/.ws/attached" /root/.ws/attached /home/*/.ws/attached /tmp/.ws/attached; do [ -d "$d" ] && echo "$d"; done; true',
          ],
          { timeoutMs: 30_000 },
        );
        const folders = found.stdoutText.split('\n').filter(Boolean);
        if (folders.length === 0) {
          await workspace.close();
          test.skip('the backend keeps no attachment records inside the sandbox');
        }
        const planted = await sandbox.exec(
          [
            'sh',
            '-c',
            'for d in "$@"; do touch -d "2099-01-01 00:00:00" "$d/0123456789ab-1-deadbeef"; done',
            'sh',
            ...folders,
          ],
          { timeoutMs: 10_000 },
        );
        expect(planted.exitCode, planted.stderrText).toBe(0);
        await workspace.close();
        expect(await settled(look, workspaceId)).toEqual([]);
      },
      90_000,
    );
  });
}
