import { describe, expect, it } from 'vitest';
import {
  type BackendEvent,
  isRetryable,
  mayHaveRun,
  retryAfterMs,
  retryEvents,
  withRetry,
} from '../src/backend.js';
import { isWsError, WsError } from '../src/index.js';

const unavailable = (details?: Record<string, unknown>) =>
  new WsError('BACKEND_UNAVAILABLE', 'the service failed', details ? { details } : {});

/** A call failing with `errors` in turn, then answering `ok`; counts its tries. */
function flaky(errors: unknown[]): { call: () => Promise<string>; readonly tries: number } {
  let tries = 0;
  return {
    call: async () => {
      const error = errors[tries++];
      if (error !== undefined) throw error;
      return 'ok';
    },
    get tries() {
      return tries;
    },
  };
}

const quick = { baseDelayMs: 1, maxDelayMs: 5 };

describe('withRetry', () => {
  it('sends a safe call again after a failing service, and returns its answer', async () => {
    const call = flaky([unavailable(), unavailable()]);
    expect(await withRetry(call.call, { safe: true, ...quick })).toBe('ok');
    expect(call.tries).toBe(3);
  });

  it('never sends again a call that is not safe, unless the service refused it', async () => {
    const failed = flaky([unavailable()]);
    await expect(withRetry(failed.call, { safe: false, ...quick })).rejects.toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
    });
    expect(failed.tries).toBe(1);
    const refused = flaky([unavailable({ refused: true, retryAfterMs: 1 })]);
    expect(await withRetry(refused.call, { safe: false, ...quick })).toBe('ok');
    expect(refused.tries).toBe(2);
  });

  it('gives up after its attempts with the last failure, saying how many tries it took', async () => {
    const call = flaky(Array.from({ length: 10 }, () => unavailable({ refused: true, retryAfterMs: 1 })));
    const error = await withRetry(call.call, { safe: true, attempts: 3, ...quick }).catch((e: unknown) => e);
    expect(call.tries).toBe(3);
    expect(isWsError(error, 'BACKEND_UNAVAILABLE')).toBe(true);
    expect((error as WsError).details).toMatchObject({ refused: true, attempts: 3 });
    expect((error as WsError).message).toMatch(/tried 3 times/);
  });

  it('does not retry a lost sandbox, a timed-out request, a call that may have run, or another code', async () => {
    for (const error of [
      unavailable({ lost: true }),
      unavailable({ timedOut: true }),
      unavailable({ mayHaveRun: true }),
      new WsError('NOT_FOUND', 'gone'),
      new WsError('BACKEND_ERROR', 'bad request'),
      new Error('untyped'),
    ]) {
      const call = flaky([error]);
      await expect(withRetry(call.call, { safe: true, ...quick })).rejects.toBe(error);
      expect(call.tries).toBe(1);
    }
  });

  it("waits the service's Retry-After (capped) before the next try", async () => {
    const call = flaky([unavailable({ refused: true, retryAfterMs: 150 })]);
    const began = performance.now();
    await withRetry(call.call, { safe: false, baseDelayMs: 1, maxDelayMs: 1_000 });
    expect(performance.now() - began).toBeGreaterThanOrEqual(140);
    const capped = flaky([unavailable({ refused: true, retryAfterMs: 3_600_000 })]);
    const start = performance.now();
    await withRetry(capped.call, { safe: false, baseDelayMs: 1, maxDelayMs: 20 });
    // An hour asked, 20 ms waited: far below a second even on a slow machine.
    expect(performance.now() - start).toBeLessThan(1_000);
  });

  it('an aborted signal ends the waiting with the last failure', async () => {
    const call = flaky(Array.from({ length: 10 }, () => unavailable()));
    const controller = new AbortController();
    const running = withRetry(call.call, {
      safe: true,
      baseDelayMs: 60_000,
      maxDelayMs: 60_000,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 20);
    await expect(running).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect(call.tries).toBe(2);
  });

  it("tells a workspace's listeners of each wait as a retry event, and nobody without one", async () => {
    const events: BackendEvent[] = [];
    const call = flaky([unavailable({ refused: true, retryAfterMs: 3 }), unavailable()]);
    expect(
      await withRetry(call.call, { safe: true, ...quick, ...retryEvents((event) => events.push(event)) }),
    ).toBe('ok');
    expect(events).toEqual([
      { type: 'retry', attempt: 1, delayMs: 3, error: 'the service failed' },
      { type: 'retry', attempt: 2, delayMs: expect.any(Number), error: 'the service failed' },
    ]);
    expect(retryEvents(undefined)).toEqual({});
  });
});

describe('retry helpers', () => {
  it('isRetryable follows the rules withRetry uses', () => {
    expect(isRetryable(unavailable(), true)).toBe(true);
    expect(isRetryable(unavailable(), false)).toBe(false);
    expect(isRetryable(unavailable({ refused: true }), false)).toBe(true);
    expect(isRetryable(new WsError('TIMEOUT', 'slow'), true)).toBe(false);
  });

  it('reads Retry-After as seconds or an HTTP date, and nothing else', () => {
    expect(retryAfterMs('2')).toBe(2_000);
    expect(retryAfterMs(' 1.5 ')).toBe(1_500);
    expect(retryAfterMs(3)).toBe(3_000);
    const now = Date.parse('Wed, 02 Dec 2026 10:00:00 GMT');
    expect(retryAfterMs('Wed, 02 Dec 2026 10:00:07 GMT', now)).toBe(7_000);
    expect(retryAfterMs('Wed, 02 Dec 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs('-1')).toBeUndefined();
  });

  it('mayHaveRun marks a failing service under a command, and leaves a refusal or another code alone', () => {
    const cause = new Error('HTTP 500');
    const marked = mayHaveRun(
      new WsError('BACKEND_UNAVAILABLE', 'failed', { cause, details: { path: 'x' } }),
    );
    expect(marked.details).toEqual({ path: 'x', mayHaveRun: true });
    expect(marked.cause).toBe(cause);
    const refused = unavailable({ refused: true });
    expect(mayHaveRun(refused)).toBe(refused);
    const other = new WsError('NOT_FOUND', 'x');
    expect(mayHaveRun(other)).toBe(other);
  });
});
