import { isWsError } from '@ws/core';
import { expect } from 'vitest';
import { type CaseControls, conformanceCase, expectWsError } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

const decoder = new TextDecoder();

/** Everything a process printed on one stream, until it closed it. */
async function drain(stream: AsyncIterable<Uint8Array>): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  return text;
}

/** Long-lived processes: stdin, stdout and stderr, exit codes, kill, and the refusal where absent. */
export function spawnArea(context: AreaContext): void {
  describe('spawn', { decidedBy: 'backend' }, () => {
    let workspace: WorkspaceUnderTest;

    beforeAll(async () => {
      workspace = await context.create();
      await workspace.initialize();
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await workspace?.close();
    }, context.caseTimeoutMs);

    const requireSpawn = (test: CaseControls) => {
      if (!workspace.getSandbox().capabilities.spawn)
        test.skip(`the ${workspace.capabilities.backend} sandbox declares spawn: false`);
    };

    conformanceCase(
      context,
      'spawn.unsupported',
      'a sandbox without spawn refuses it with CAPABILITY_UNSUPPORTED',
      async (test) => {
        const sandbox = workspace.getSandbox();
        if (sandbox.capabilities.spawn) test.skip('this sandbox declares spawn: true');
        await expectWsError(() => sandbox.spawn(['cat']), 'CAPABILITY_UNSUPPORTED');
      },
    );

    conformanceCase(
      context,
      'spawn.stdio',
      'a spawned process reads what is written to its stdin and prints to stdout and stderr, apart',
      async (test) => {
        requireSpawn(test);
        const process = await workspace
          .getSandbox()
          .spawn(['sh', '-c', 'while read line; do echo "out:$line"; echo "err:$line" >&2; done; exit 7']);
        const stdout = drain(process.stdout);
        const stderr = drain(process.stderr);
        await process.write('one\n');
        await process.write(new TextEncoder().encode('two\n'));
        await process.closeStdin();
        expect((await process.exited).exitCode).toBe(7);
        expect(await stdout).toBe('out:one\nout:two\n');
        expect(await stderr).toBe('err:one\nerr:two\n');
      },
    );

    conformanceCase(
      context,
      'spawn.cwd-env',
      'a spawned process runs in the cwd and with the env it was given',
      async (test) => {
        requireSpawn(test);
        const sandbox = workspace.getSandbox();
        await sandbox.mkdir('spawn-here', { recursive: true });
        const process = await sandbox.spawn(['sh', '-c', 'pwd; echo "$GREETING"'], {
          cwd: 'spawn-here',
          env: { GREETING: 'hi "there"' },
        });
        const stdout = drain(process.stdout);
        void drain(process.stderr);
        expect((await process.exited).exitCode).toBe(0);
        expect(await stdout).toBe(`${workspace.workdir}/spawn-here\nhi "there"\n`);
      },
    );

    conformanceCase(
      context,
      'spawn.kill',
      'kill stops a process and its children; exited reports how it ended; dispose is idempotent',
      async (test) => {
        requireSpawn(test);
        const sandbox = workspace.getSandbox();
        // A duration no other process of this machine uses, so that looking for it finds only these.
        const marker = `600.${Date.now() % 100_000}`;
        const process = await sandbox.spawn(['sh', '-c', `sleep ${marker} & sleep ${marker}; echo never`]);
        const stdout = drain(process.stdout);
        void drain(process.stderr);
        await process.kill('SIGKILL');
        const exit = await process.exited;
        expect(exit.exitCode).not.toBe(0);
        expect(await stdout).toBe('');
        await process[Symbol.asyncDispose]();
        await process[Symbol.asyncDispose]();
        // The background child went with it.
        const left = await sandbox.exec([
          'sh',
          '-c',
          'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < "$f" 2>/dev/null; echo; done | grep -c "^sleep $1" || true',
          'sh',
          marker,
        ]);
        expect(left.stdoutText.trim()).toBe('0');
      },
    );

    conformanceCase(
      context,
      'spawn.close-unread',
      'close() ends a workspace whose spawned process printed more than anyone read, and the process with it',
      async (test) => {
        requireSpawn(test);
        const own = await context.create();
        await own.initialize();
        // More output than any backend buffers for a reader that never comes, then a long sleep.
        const process = await own
          .getSandbox()
          .spawn(['sh', '-c', 'head -c 8000000 /dev/zero; echo done >&2; sleep 600']);
        // One chunk read, and the stream neither read again nor cancelled: the rest waits in the pipes.
        const first = await process.stdout[Symbol.asyncIterator]().next();
        expect(first.done).toBe(false);
        await own.close();
        // The process went with the workspace: its exit is known, whatever its code.
        await process.exited;
      },
    );

    conformanceCase(
      context,
      'spawn.write-after-exit',
      'writing to a process that exited fails with a WsError',
      async (test) => {
        requireSpawn(test);
        const process = await workspace.getSandbox().spawn(['true']);
        void drain(process.stdout);
        void drain(process.stderr);
        await process.exited;
        let failure: unknown;
        for (let attempt = 0; attempt < 20 && failure === undefined; attempt++) {
          try {
            await process.write('late\n');
            await new Promise((resolve) => setTimeout(resolve, 20));
          } catch (error) {
            failure = error;
          }
        }
        expect(isWsError(failure), `writing after exit: ${String(failure)}`).toBe(true);
      },
    );
  });
}
