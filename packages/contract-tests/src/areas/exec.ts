import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompleteSandbox } from '@ws/core';
import { shellQuote } from '@ws/core/backend';
import { expect } from 'vitest';
import { allByteValues, conformanceCase, expectWsError, liveBytes, sameBytes, sleep } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

/** Commands: argv, cwd, env, stdin, output streams, exit codes, timeouts, aborts and output caps. */
export function execArea(context: AreaContext): void {
  describe('exec', { decidedBy: 'backend' }, () => {
    let workspace: WorkspaceUnderTest;
    let sandbox: CompleteSandbox;

    beforeAll(async () => {
      workspace = await context.create();
      await workspace.initialize();
      sandbox = workspace.getSandbox();
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await workspace?.close();
    }, context.caseTimeoutMs);

    conformanceCase(
      context,
      'exec.argv-verbatim',
      'passes every argument verbatim, with no shell in between',
      async () => {
        const args = [
          'with space',
          "it's",
          'say "hi"',
          '$HOME',
          '*',
          'new\nline',
          '-n',
          '--version',
          '',
          '\\n',
          '`id`',
          '$(id)',
          'ünï 名',
        ];
        const result = await sandbox.exec(['printf', '%s\\0', ...args]);
        expect(result.exitCode).toBe(0);
        expect(result.stdoutText.split('\0').slice(0, -1)).toEqual(args);
      },
    );

    conformanceCase(
      context,
      'exec.shell-opt-in',
      'runs a shell only when the argv asks for one',
      async () => {
        const result = await sandbox.exec(['sh', '-c', 'echo $((6 * 7)) | tr 4 X']);
        expect(result.stdoutText).toBe('X2\n');
      },
    );

    conformanceCase(context, 'exec.cwd-default', 'runs in the workdir by default', async () => {
      const result = await sandbox.exec(['pwd']);
      expect(result.stdoutText.trim()).toBe(workspace.workdir);
    });

    conformanceCase(context, 'exec.cwd-relative', 'resolves a relative cwd against the workdir', async () => {
      await sandbox.mkdir('sub dir/-deeper', { recursive: true });
      const result = await sandbox.exec(['pwd'], { cwd: 'sub dir/-deeper' });
      expect(result.stdoutText.trim()).toBe(`${workspace.workdir}/sub dir/-deeper`);
      const absolute = await sandbox.exec(['pwd'], { cwd: '/' });
      expect(absolute.stdoutText.trim()).toBe('/');
    });

    conformanceCase(context, 'exec.cwd-missing', 'refuses a missing cwd with NOT_FOUND', async () => {
      await expectWsError(() => sandbox.exec(['pwd'], { cwd: 'no/such/dir' }), 'NOT_FOUND');
    });

    conformanceCase(context, 'exec.env', 'adds env variables for one command, verbatim', async () => {
      const value = 'a b $c "d" \'e\'\nf';
      const result = await sandbox.exec(['sh', '-c', 'printf %s "$WS_CONFORMANCE"'], {
        env: { WS_CONFORMANCE: value },
      });
      expect(result.stdoutText).toBe(value);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
      const later = await sandbox.exec(['sh', '-c', 'printf %s "${WS_CONFORMANCE-unset}"']);
      expect(later.stdoutText).toBe('unset');
    });

    conformanceCase(context, 'exec.stdin', 'feeds stdin from a string, bytes and a stream', async () => {
      expect((await sandbox.exec(['cat'], { stdin: 'héllo\n' })).stdoutText).toBe('héllo\n');
      const bytes = allByteValues();
      expect(sameBytes((await sandbox.exec(['cat'], { stdin: bytes })).stdout, bytes)).toBe(true);
      async function* chunks(): AsyncIterable<Uint8Array> {
        for (let index = 0; index < 50; index++) yield new TextEncoder().encode(`line ${index}\n`);
      }
      const streamed = await sandbox.exec(['wc', '-l'], { stdin: chunks() });
      expect(streamed.stdoutText.trim()).toBe('50');
      const none = await sandbox.exec(['cat']);
      expect(none.exitCode).toBe(0);
      expect(none.stdoutText).toBe('');
    });

    conformanceCase(context, 'exec.streams-separate', 'keeps stdout and stderr apart', async () => {
      const result = await sandbox.exec(['sh', '-c', 'echo out; echo err >&2; echo out2']);
      expect(result.stdoutText).toBe('out\nout2\n');
      expect(result.stderrText).toBe('err\n');
    });

    conformanceCase(context, 'exec.binary-output', 'returns stdout as exact bytes', async () => {
      await sandbox.writeFile('bytes.bin', allByteValues());
      const result = await sandbox.exec(['cat', 'bytes.bin']);
      expect(sameBytes(result.stdout, allByteValues())).toBe(true);
    });

    conformanceCase(context, 'exec.exit-codes', 'reports exit codes 0, 1 and 42 as results', async () => {
      expect((await sandbox.exec(['true'])).exitCode).toBe(0);
      expect((await sandbox.exec(['false'])).exitCode).toBe(1);
      const result = await sandbox.exec(['sh', '-c', 'exit 42']);
      expect(result.exitCode).toBe(42);
      expect(result.timedOut).toBe(false);
      expect(result.truncated).toBe(false);
    });

    conformanceCase(
      context,
      'exec.missing-binary',
      'reports a missing executable as exit 127 with a message, not a throw; a stderr listener hears of it too',
      async () => {
        const heard: Uint8Array[] = [];
        const result = await sandbox.exec(['ws-no-such-binary-x'], {
          onStderr: (chunk) => void heard.push(chunk),
        });
        expect(result.exitCode).toBe(127);
        expect(result.stderrText).toMatch(/ws-no-such-binary-x/);
        // Streamed as it came: the wording may be the sandbox's own, the command is named.
        expect(Buffer.concat(heard).toString('utf8')).toMatch(/ws-no-such-binary-x/);
      },
    );

    conformanceCase(
      context,
      'exec.invalid-argv',
      'refuses an empty argv or a NUL byte with INVALID_ARGUMENT',
      async () => {
        await expectWsError(() => sandbox.exec([]), 'INVALID_ARGUMENT');
        await expectWsError(() => sandbox.exec(['echo', 'a\0b']), 'INVALID_ARGUMENT');
      },
    );

    conformanceCase(
      context,
      'exec.host-as-declared',
      "a command sees the host's files and this process exactly when the workspace declares isolation: none",
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'ws-host-canary-'));
        const file = join(dir, 'canary.txt');
        const canary = `HOST-CANARY-${randomBytes(8).toString('hex')}`;
        writeFileSync(file, canary);
        // This process's command line as the host sees it; a process of the same pid in another pid
        // namespace has another one.
        const commandLine = readFileSync('/proc/self/cmdline', 'utf8').replaceAll('\0', ' ').trim();
        try {
          const result = await sandbox.exec([
            'sh',
            '-c',
            'cat -- "$1" 2>/dev/null; echo; tr "\\0" " " < "/proc/$2/cmdline" 2>/dev/null',
            'sh',
            file,
            String(process.pid),
          ]);
          const [seenFile = '', seenCommandLine = ''] = result.stdoutText.split('\n');
          const none = workspace.capabilities.isolation === 'none';
          expect(
            seenFile === canary,
            `isolation: ${workspace.capabilities.isolation}, read ${seenFile}`,
          ).toBe(none);
          expect(
            seenCommandLine.trim() === commandLine,
            `isolation: ${workspace.capabilities.isolation}`,
          ).toBe(none);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );

    const survivorScript = (marker: string) =>
      `(sleep 1 && echo survived > ${shellQuote(marker)}) & sleep 30; echo finished`;

    conformanceCase(
      context,
      'exec.timeout-kills-tree',
      'kills the whole process tree on timeout',
      async () => {
        const marker = `timeout-marker-${Date.now()}`;
        const result = await sandbox.exec(['sh', '-c', survivorScript(marker)], { timeoutMs: 300 });
        expect(result.timedOut).toBe(true);
        expect(result.exitCode).toBe(-1);
        expect(result.stdoutText).not.toContain('finished');
        await sleep(1_500);
        expect(await sandbox.exists(marker)).toBe(false);
      },
    );

    conformanceCase(
      context,
      'exec.abort-kills-tree',
      'kills the whole process tree on abort and rejects with ABORTED',
      async () => {
        const marker = `abort-marker-${Date.now()}`;
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 300);
        await expectWsError(
          () => sandbox.exec(['sh', '-c', survivorScript(marker)], { signal: controller.signal }),
          'ABORTED',
        );
        await sleep(1_500);
        expect(await sandbox.exists(marker)).toBe(false);
      },
    );

    conformanceCase(
      context,
      'exec.abort-before-start',
      'rejects an already aborted signal without running anything',
      async () => {
        const marker = `never-${Date.now()}`;
        await expectWsError(
          () => sandbox.exec(['touch', marker], { signal: AbortSignal.abort() }),
          'ABORTED',
        );
        expect(await sandbox.exists(marker)).toBe(false);
      },
    );

    conformanceCase(
      context,
      'exec.output-cap',
      'caps huge output while reading, keeping host memory flat',
      async () => {
        const size = context.largeOutputBytes;
        const cap = 1024 * 1024;
        // What the host holds is looked at eight times while the output streams (from inside the
        // output listener, so a fast backend is looked at as often as a slow one) and once at the end.
        const step = Math.max(cap, Math.floor(size / 8));
        let streamed = 0;
        let nextLook = step;
        const baseline = liveBytes();
        let held = 0;
        const result = await sandbox.exec(['sh', '-c', `head -c ${size} /dev/zero; echo done >&2`], {
          maxOutputBytes: cap,
          onStdout: (chunk) => {
            streamed += chunk.byteLength;
            if (streamed < nextLook) return;
            nextLook += step;
            held = Math.max(held, liveBytes() - baseline);
          },
        });
        held = Math.max(held, liveBytes() - baseline);
        expect(result.exitCode).toBe(0);
        expect(result.truncated).toBe(true);
        expect(result.stdout.byteLength).toBe(cap);
        expect(result.stderrText).toBe('done\n');
        expect(streamed).toBe(size);
        // Holding the output would keep what streamed so far alive (7/8 of it at the last look); a
        // streaming cap keeps the capped part and a few buffers.
        expect(held, `held ${(held / 1048576).toFixed(1)} MiB`).toBeLessThan(size / 2);
      },
      // Five minutes, or more for a large output: 2 s per MB (a slow channel on a busy machine).
      Math.max(300_000, (context.largeOutputBytes / 1_000_000) * 2_000),
    );

    conformanceCase(
      context,
      'exec.output-listener-backpressure',
      'waits for a slow async output listener without losing bytes',
      async () => {
        let received = 0;
        const result = await sandbox.exec(['head', '-c', '3000000', '/dev/zero'], {
          maxOutputBytes: 0,
          onStdout: async (chunk) => {
            received += chunk.byteLength;
            await sleep(1);
          },
        });
        expect(result.exitCode).toBe(0);
        expect(received).toBe(3_000_000);
        expect(result.stdout.byteLength).toBe(0);
        expect(result.truncated).toBe(true);
      },
    );
  });
}
