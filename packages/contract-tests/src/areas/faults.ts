import { randomBytes } from 'node:crypto';
import { isWsError, type WorkspaceEvent, type WorkspaceEventListener } from '@ws/core';
import { expect } from 'vitest';
import { type CaseControls, conformanceCase, sleep } from '../harness.js';
import { afterAll, describe } from '../suite.js';
import type { AreaContext, FaultRig, WorkspaceUnderTest } from '../target.js';

/** A call's outcome: `resolved`, the WsError's code, or `untyped: …` (a defect). */
const outcome = async (promise: Promise<unknown>): Promise<string> => (await described(promise)).outcome;

/** A call's outcome and, when it failed, its message (for the assertion's report). */
const described = (promise: Promise<unknown>): Promise<{ outcome: string; message: string }> =>
  promise.then(
    () => ({ outcome: 'resolved', message: '' }),
    (error: unknown) => ({
      outcome: isWsError(error) ? error.code : `untyped: ${String(error)}`,
      message: String(error),
    }),
  );

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/**
 * The vendor side failing: the service stops forwarding without closing, resets connections, or
 * cannot be reached at all. Calls end within their limits with a typed error, a command that may
 * have run is never sent again, and the workspace works again once the fault clears (or a new object
 * on the same id does).
 */
export function faultsArea(context: AreaContext): void {
  describe('faults: the vendor side', { decidedBy: 'backend' }, () => {
    let rig: Promise<FaultRig> | undefined;
    const opened: WorkspaceUnderTest[] = [];
    afterAll(async () => {
      const started = await rig?.catch(() => undefined);
      started?.set('pass');
      await Promise.allSettled(opened.map((workspace) => workspace.close()));
      await started?.close();
    }, context.caseTimeoutMs);

    const rigged = async (test: CaseControls): Promise<FaultRig> => {
      const faults = context.target.faults?.bind(context.target);
      if (!faults) test.skip('the target reaches no remote service through a fault rig');
      rig ??= faults();
      const started = await rig;
      started.set('pass');
      return started;
    };
    const create = async (
      started: FaultRig,
      workspaceId = context.newId(),
      onEvent?: WorkspaceEventListener,
    ) => {
      const workspace = await started.create({ workspaceId, ...(onEvent ? { onEvent } : {}) });
      opened.push(workspace);
      return workspace;
    };
    /** The workspace again after a fault: the same object when it works, else a new one on the id. */
    const recovered = async (started: FaultRig, workspace: WorkspaceUnderTest, probe: string[]) => {
      const again = await outcome(workspace.getSandbox().exec(probe, { timeoutMs: 15_000 }));
      if (again === 'resolved') return workspace;
      // Saying so is allowed; anything else (an untyped error, another code) is not.
      expect(again).toBe('BACKEND_UNAVAILABLE');
      await workspace.close().catch(() => {});
      const next = await create(started, workspace.id);
      await next.initialize();
      return next;
    };

    conformanceCase(
      context,
      'faults.hang',
      'a service that stops answering without closing ends each call within its limits, typed; the workspace works again after',
      async (test) => {
        const started = await rigged(test);
        const workspace = await create(started);
        await workspace.initialize();
        await workspace.getSandbox().writeFile('kept.txt', 'kept');
        started.set('hang');
        try {
          const exec = await outcome(
            workspace.getSandbox().exec(['sh', '-c', 'sleep 1; echo done'], { timeoutMs: 3_000 }),
          );
          expect(['BACKEND_UNAVAILABLE', 'TIMEOUT']).toContain(exec);
          const other = await create(started);
          expect(await outcome(other.initialize())).toBe('BACKEND_UNAVAILABLE');
        } finally {
          started.set('pass');
        }
        const working = await recovered(started, workspace, ['cat', 'kept.txt']);
        expect(decode(await working.getSandbox().readFile('kept.txt'))).toBe('kept');
      },
      120_000,
    );

    conformanceCase(
      context,
      'faults.reset-mid-exec',
      'connections reset while a command runs: the call returns or says it may have run, and the command ran once',
      async (test) => {
        const started = await rigged(test);
        const workspace = await create(started);
        await workspace.initialize();
        const sandbox = workspace.getSandbox();
        const counter = `.ws-faults/runs-${randomBytes(4).toString('hex')}`;
        await sandbox.mkdir('.ws-faults', { recursive: true });
        let failure: unknown;
        const running = sandbox
          .exec(['sh', '-c', 'echo run >> "$1"; sleep 3; echo done', 'sh', counter], { timeoutMs: 30_000 })
          .catch((error: unknown) => {
            failure = error;
          });
        // Reset once the command has started (its mark is there), while it sleeps.
        for (let tries = 0; tries < 100 && !(await sandbox.exists(counter)); tries++) await sleep(100);
        started.set('reset');
        await sleep(300);
        started.set('pass');
        await running;
        if (failure !== undefined) {
          expect(isWsError(failure, 'BACKEND_UNAVAILABLE'), String(failure)).toBe(true);
          expect((failure as { details?: { mayHaveRun?: unknown } }).details?.mayHaveRun).toBe(true);
        }
        const working = await recovered(started, workspace, ['true']);
        await sleep(3_000);
        expect(decode(await working.getSandbox().readFile(counter))).toBe('run\n');
      },
      120_000,
    );

    conformanceCase(
      context,
      'faults.http-500',
      'a service answering 500 fails each call with BACKEND_UNAVAILABLE (never BACKEND_ERROR), within its limits; the workspace works again after',
      async (test) => {
        const started = await rigged(test);
        const workspace = await create(started);
        await workspace.initialize();
        await workspace.getSandbox().writeFile('kept.txt', 'kept');
        const before = started.answered ?? 0;
        started.set('http-500');
        try {
          const other = await create(started);
          const open = other.initialize();
          expect(await outcome(open)).toBe('BACKEND_UNAVAILABLE');
          // The message names the vendor, so an operator knows whose service failed.
          expect(await open.catch((error: Error) => error.message)).toContain(started.vendor);
          // A call on the open workspace: done (it needed no new request) or typed, never a guess.
          const exec = await described(workspace.getSandbox().exec(['echo', 'x'], { timeoutMs: 10_000 }));
          expect(['resolved', 'BACKEND_UNAVAILABLE', 'TIMEOUT'], exec.message).toContain(exec.outcome);
        } finally {
          started.set('pass');
        }
        // The service did fail the calls (the proxy answered them), and they were typed above.
        if (started.answered !== undefined) expect(started.answered).toBeGreaterThan(before);
        const working = await recovered(started, workspace, ['cat', 'kept.txt']);
        expect(decode(await working.getSandbox().readFile('kept.txt'))).toBe('kept');
      },
      120_000,
    );

    conformanceCase(
      context,
      'faults.rate-limited',
      'a service answering 429 with Retry-After: a throttled open is sent again and succeeds once the limit lifts; a lasting limit ends typed',
      async (test) => {
        const started = await rigged(test);
        // Lasting: every request refused; the open ends within its limits, BACKEND_UNAVAILABLE.
        started.set('http-429');
        try {
          const refused = await create(started);
          const began = Date.now();
          expect(await outcome(refused.initialize())).toBe('BACKEND_UNAVAILABLE');
          expect(Date.now() - began).toBeLessThan(60_000);
        } finally {
          started.set('pass');
        }
        // Passing: refused for a while, then served; the open waits it out and succeeds, and its
        // listeners hear each wait.
        const before = started.answered ?? 0;
        const retries: Extract<WorkspaceEvent, { type: 'retry' }>[] = [];
        started.set('http-429');
        const lift = setTimeout(() => started.set('pass'), 1_500);
        try {
          const throttled = await create(started, context.newId(), (event) => {
            if (event.type === 'retry') retries.push(event);
          });
          await throttled.initialize();
          expect((await throttled.getSandbox().exec(['echo', 'through'])).stdoutText).toBe('through\n');
        } finally {
          clearTimeout(lift);
          started.set('pass');
        }
        if (started.answered !== undefined) expect(started.answered).toBeGreaterThan(before);
        if (started.retriesUnseen === undefined) {
          expect(retries.length, 'a retry event for each wait of the throttled open').toBeGreaterThan(0);
          for (const retry of retries) {
            expect(retry.attempt).toBeGreaterThanOrEqual(1);
            expect(retry.delayMs).toBeGreaterThan(0);
            expect(retry.error).toContain(started.vendor);
          }
        }
      },
      120_000,
    );

    conformanceCase(
      context,
      'faults.sandbox-removed',
      'a sandbox removed from outside fails the calls of the workspace using it with BACKEND_UNAVAILABLE within their limits, never a hang; the id opens again',
      async (test) => {
        const started = await rigged(test);
        const workspace = await create(started);
        await workspace.initialize();
        await workspace.getSandbox().writeFile('kept.txt', 'kept');
        // Another object on the id removes the sandbox (as the vendor's console or a reaper would).
        const remover = await create(started, workspace.id);
        await remover.initialize();
        await remover.destroy();
        const began = Date.now();
        const exec = await described(workspace.getSandbox().exec(['echo', 'x'], { timeoutMs: 10_000 }));
        const read = await described(workspace.getSandbox().readFile('kept.txt'));
        expect(Date.now() - began).toBeLessThan(40_000);
        // Working again on a new sandbox is allowed; a typed "unavailable" is; anything else is not.
        expect(['resolved', 'BACKEND_UNAVAILABLE'], exec.message).toContain(exec.outcome);
        expect(['resolved', 'BACKEND_UNAVAILABLE', 'NOT_FOUND'], read.message).toContain(read.outcome);
        const working = await recovered(started, workspace, ['true']);
        expect((await working.getSandbox().exec(['echo', 'again'])).stdoutText).toBe('again\n');
      },
      120_000,
    );

    conformanceCase(
      context,
      'faults.unreachable-open',
      'a service that resets every connection fails initialize with BACKEND_UNAVAILABLE, and the same id opens once it is back',
      async (test) => {
        const started = await rigged(test);
        const workspaceId = context.newId();
        const first = await create(started, workspaceId);
        started.set('reset');
        try {
          expect(await outcome(first.initialize())).toBe('BACKEND_UNAVAILABLE');
        } finally {
          started.set('pass');
        }
        const second = await create(started, workspaceId);
        await second.initialize();
        expect((await second.getSandbox().exec(['echo', 'back'])).stdoutText).toBe('back\n');
        await second.destroy();
      },
      120_000,
    );
  });
}
