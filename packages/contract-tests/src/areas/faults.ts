import { randomBytes } from 'node:crypto';
import { isWsError } from '@ws/core';
import { afterAll, describe, expect } from 'vitest';
import { type CaseControls, conformanceCase, sleep } from '../harness.js';
import type { AreaContext, FaultRig, WorkspaceUnderTest } from '../target.js';

/** A call's outcome: `resolved`, the WsError's code, or `untyped: …` (a defect). */
const outcome = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (isWsError(error) ? error.code : `untyped: ${String(error)}`),
  );

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/**
 * The vendor side failing: the service stops forwarding without closing, resets connections, or
 * cannot be reached at all. Calls end within their limits with a typed error, a command that may
 * have run is never sent again, and the workspace works again once the fault clears (or a new object
 * on the same id does).
 */
export function faultsArea(context: AreaContext): void {
  describe('faults: the vendor side', () => {
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
    const create = async (started: FaultRig, workspaceId = context.newId()) => {
      const workspace = await started.create({ workspaceId });
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
