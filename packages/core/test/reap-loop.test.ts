import { describe, expect, it } from 'vitest';
import { GcLedger, type ReapCandidate, reapCandidates, timeOf } from '../src/backend.js';
import { WsError } from '../src/index.js';

const HOUR = 3_600_000;

/** A candidate whose steps are recorded in `steps`; each step's answer is given. */
function candidate(
  name: string,
  steps: string[],
  given: Partial<{
    idleMs: number;
    busy: boolean;
    inUse: boolean;
    lastUsedAgoMs: number;
    taken: boolean;
    fail: 'probe' | 'recheck' | 'remove';
    lost: boolean;
    probe: false;
  }> = {},
): ReapCandidate {
  const failure = () =>
    given.lost
      ? new WsError('NOT_FOUND', `${name} is gone`, { details: { lost: true } })
      : new Error(`${name} broke`);
  return {
    kind: 'sandbox',
    name,
    workspaceId: `id-${name}`,
    owner: 'team',
    idleSince: Date.now() - (given.idleMs ?? 2 * HOUR),
    busy: given.busy,
    ...(given.probe === false
      ? {}
      : {
          probe: async () => {
            steps.push(`probe ${name}`);
            if (given.fail === 'probe') throw failure();
            return {
              inUse: given.inUse === true,
              ...(given.lastUsedAgoMs === undefined ? {} : { lastUsedAt: Date.now() - given.lastUsedAgoMs }),
            };
          },
        }),
    takenMeanwhile: async () => {
      steps.push(`recheck ${name}`);
      if (given.fail === 'recheck') throw failure();
      return given.taken === true;
    },
    remove: async () => {
      steps.push(`remove ${name}`);
      if (given.fail === 'remove') throw failure();
    },
  };
}

const reasons = (ledger: GcLedger) => Object.fromEntries(ledger.kept.map((kept) => [kept.name, kept.reason]));
const removed = (ledger: GcLedger) => ledger.removed.map((resource) => resource.name);

describe('reapCandidates', () => {
  it('decides each candidate by the one table: busy, in use, young, taken meanwhile, removed', async () => {
    const steps: string[] = [];
    const ledger = new GcLedger({ olderThanMs: HOUR });
    await reapCandidates(ledger, [
      candidate('busy', steps, { busy: true }),
      candidate('open', steps, { inUse: true }),
      candidate('young', steps, { idleMs: 60_000 }),
      candidate('touched', steps, { lastUsedAgoMs: 60_000 }),
      candidate('taken', steps, { taken: true }),
      candidate('orphan', steps),
      candidate('unprobed', steps, { probe: false }),
    ]);
    expect(reasons(ledger)).toEqual({
      busy: 'in-use',
      open: 'in-use',
      young: 'young',
      touched: 'young',
      taken: 'in-use',
    });
    expect(removed(ledger)).toEqual(['orphan', 'unprobed']);
    // A busy one is never looked into; a young one is never looked at again; only the checked go.
    expect(steps).toEqual([
      'probe open',
      'probe young',
      'probe touched',
      'probe taken',
      'recheck taken',
      'probe orphan',
      'recheck orphan',
      'remove orphan',
      'recheck unprobed',
      'remove unprobed',
    ]);
    const touched = ledger.kept.find((kept) => kept.name === 'touched');
    expect(touched?.idleMs).toBeGreaterThanOrEqual(60_000);
    expect(touched?.idleMs).toBeLessThan(HOUR);
    expect(ledger.report().listed).toHaveLength(7);
    expect(ledger.removed[0]).toMatchObject({ kind: 'sandbox', workspaceId: 'id-orphan', owner: 'team' });
  });

  it('removes nothing in a dry run and never looks again there', async () => {
    const steps: string[] = [];
    const ledger = new GcLedger({ olderThanMs: HOUR, dryRun: true });
    await reapCandidates(ledger, [candidate('orphan', steps), candidate('young', steps, { idleMs: 1 })]);
    expect(removed(ledger)).toEqual(['orphan']);
    expect(steps).toEqual(['probe orphan', 'probe young']);
  });

  it('keeps a candidate whose step failed as failed, translated, and goes on with the next', async () => {
    const steps: string[] = [];
    const ledger = new GcLedger({ olderThanMs: HOUR });
    await reapCandidates(
      ledger,
      [
        candidate('a', steps, { fail: 'probe' }),
        candidate('b', steps, { fail: 'recheck' }),
        candidate('c', steps, { fail: 'remove' }),
        candidate('d', steps),
      ],
      (error, what) => new WsError('BACKEND_ERROR', `${what}: ${(error as Error).message}`),
    );
    expect(reasons(ledger)).toEqual({ a: 'failed', b: 'failed', c: 'failed' });
    expect(ledger.kept.map((kept) => kept.error?.message)).toEqual([
      'Reaping sandbox a: a broke',
      'Reaping sandbox b: b broke',
      'Reaping sandbox c: c broke',
    ]);
    expect(removed(ledger)).toEqual(['d']);
  });

  it('translates with fromErrno by default: an errno keeps its code', async () => {
    const ledger = new GcLedger({ olderThanMs: 0 });
    const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    await reapCandidates(ledger, [
      {
        kind: 'runtime-folder',
        name: '/x',
        idleSince: 0,
        remove: async () => {
          throw denied;
        },
      },
    ]);
    expect(ledger.kept[0]?.error).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(ledger.kept[0]?.error?.message).toMatch(/^Reaping runtime-folder \/x failed/);
  });

  it('leaves out a candidate found gone before its removal: it is no longer there to list', async () => {
    const steps: string[] = [];
    const ledger = new GcLedger({ olderThanMs: HOUR });
    await reapCandidates(ledger, [
      candidate('vanished', steps, { fail: 'probe', lost: true }),
      candidate('kept', steps, { idleMs: 1 }),
    ]);
    expect(ledger.report().listed.map((resource) => resource.name)).toEqual(['kept']);
  });

  it('stops with ABORTED and the report so far when the signal fires, mid-step included', async () => {
    const controller = new AbortController();
    const steps: string[] = [];
    const ledger = new GcLedger({ olderThanMs: HOUR, signal: controller.signal });
    const second = candidate('second', steps);
    const error = await reapCandidates(ledger, [
      candidate('first', steps),
      {
        ...second,
        probe: async () => {
          controller.abort();
          throw new Error('cut off');
        },
      },
      candidate('third', steps),
    ]).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'ABORTED' });
    expect((error as WsError).details?.report).toMatchObject({ removed: [{ name: 'first' }], kept: [] });
    expect(steps.some((step) => step.endsWith('third'))).toBe(false);
  });

  it('takes candidates from an async source, one at a time', async () => {
    const steps: string[] = [];
    const ledger = new GcLedger({ olderThanMs: HOUR });
    async function* listed() {
      yield candidate('one', steps);
      steps.push('listed two');
      yield candidate('two', steps);
    }
    await reapCandidates(ledger, listed());
    expect(steps).toEqual([
      'probe one',
      'recheck one',
      'remove one',
      'listed two',
      'probe two',
      'recheck two',
      'remove two',
    ]);
  });
});

describe('timeOf', () => {
  it('reads the times listings give, and 0 for anything else', () => {
    expect(timeOf('2026-01-02T03:04:05Z')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(timeOf(new Date(5))).toBe(5);
    expect(timeOf(7)).toBe(7);
    expect([timeOf(undefined), timeOf(null), timeOf(''), timeOf('soon'), timeOf(Number.NaN)]).toEqual([
      0, 0, 0, 0, 0,
    ]);
    expect(timeOf(new Date('nope'))).toBe(0);
  });
});
