import { isWsError, WsError } from '../contracts/errors.js';
import { debugLine } from './debug-log.js';
import type { BackendEventSink } from './observer.js';

/** How often, and how patiently, a call to a vendor's service is sent again. */
export interface RetryPolicy {
  /** Tries in all, the first one included. Default 4; 1 turns retrying off. */
  readonly attempts?: number;
  /** The wait before the first retry; it doubles on each (with jitter). Default 250 ms. */
  readonly baseDelayMs?: number;
  /** The longest wait between two tries, a service's `Retry-After` included. Default 5 000 ms. */
  readonly maxDelayMs?: number;
}

/** What one call tells {@link withRetry}. */
export interface RetryOptions extends RetryPolicy {
  /**
   * Whether the call may be sent again after any failure of the service (a lookup, a read: sending
   * it twice changes nothing). When false, it is sent again only after the service refused it
   * without doing it (a rate limit, `details.refused`): a call that may have run is never repeated.
   */
  readonly safe: boolean;
  /** Ends the waiting between tries (the error is then the last failure). */
  readonly signal?: AbortSignal;
  /**
   * Told before each wait for another try (a workspace's `retry` event); without it the retry is
   * printed under `DEBUG=ws:retry`.
   */
  readonly onRetry?: (retry: { attempt: number; delayMs: number; error: string }) => void;
}

/**
 * The `onRetry` of {@link RetryOptions} that tells a workspace's listeners (its `retry` event), for a
 * provider's calls while it opens; none without a sink (retries are then printed under
 * `DEBUG=ws:retry`).
 */
export function retryEvents(events: BackendEventSink | undefined): Pick<RetryOptions, 'onRetry'> {
  return events ? { onRetry: (retry) => events({ type: 'retry', ...retry }) } : {};
}

/** How many times {@link withRetry} tries a call in all, unless told otherwise. */
export const DEFAULT_RETRY_ATTEMPTS = 4;
const DEFAULT_BASE_DELAY_MS = 250;
const DEFAULT_MAX_DELAY_MS = 5_000;
const REFUSED_DELAY_MS = 1_000;

/**
 * Whether a translated failure may be tried again: the service was unavailable (`BACKEND_UNAVAILABLE`)
 * and either refused the call without doing it (`details.refused`, a rate limit) or the call is safe
 * to repeat. A sandbox that is gone (`details.lost`) or a request that ran out of time
 * (`details.timedOut`: the caller's time is spent, and the call may have run) is never tried again.
 */
export function isRetryable(error: unknown, safe: boolean): boolean {
  if (!isWsError(error, 'BACKEND_UNAVAILABLE')) return false;
  const details = error.details ?? {};
  if (details.lost === true || details.timedOut === true) return false;
  if (details.refused === true) return true;
  return safe && details.mayHaveRun !== true;
}

/** Milliseconds from a `Retry-After` header (seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const text = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  // An HTTP date names its day and zone in letters (`Wed, 21 Oct 2015 07:28:00 GMT`).
  if (!/^[A-Za-z]{3}, /.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Runs `call` (which throws translated WsErrors), and runs it again while it fails in a way
 * {@link isRetryable} allows, waiting between tries (the service's `details.retryAfterMs`, else a
 * doubling delay with jitter, at most `maxDelayMs`). The last failure is thrown with
 * `details.attempts`; a failure that may not be retried is thrown at once, unchanged.
 */
export async function withRetry<T>(call: () => Promise<T>, options: RetryOptions): Promise<T> {
  const attempts = Math.max(1, Math.floor(options.attempts ?? DEFAULT_RETRY_ATTEMPTS));
  const base = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const max = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!isRetryable(error, options.safe)) throw error;
      const failure = error as WsError;
      if (attempt >= attempts || options.signal?.aborted) {
        if (attempt === 1) throw failure;
        throw new WsError(failure.code, `${failure.message} (tried ${attempt} times)`, {
          cause: failure.cause ?? failure,
          details: { ...failure.details, attempts: attempt },
        });
      }
      const asked = failure.details?.retryAfterMs;
      // A refusal that names no wait is given at least a second, the usual `Retry-After`.
      const first = failure.details?.refused === true ? Math.max(base, REFUSED_DELAY_MS) : base;
      const backoff = Math.max(first / 2, first * 2 ** (attempt - 1) * (0.5 + Math.random() / 2));
      const delay = Math.min(max, typeof asked === 'number' && asked >= 0 ? asked : backoff);
      if (options.onRetry) options.onRetry({ attempt, delayMs: delay, error: failure.message });
      else
        debugLine('ws:retry', `try ${attempt} failed, again in ${Math.round(delay)} ms: ${failure.message}`);
      await pause(delay, options.signal);
    }
  }
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * `error` marked `details.mayHaveRun` when it is a service failing under a command it was asked to
 * run (`BACKEND_UNAVAILABLE` that is not a refusal): the command may have started, so the caller
 * must not send it again blindly. Any other error is returned unchanged.
 */
export function mayHaveRun(error: WsError): WsError {
  if (!isWsError(error, 'BACKEND_UNAVAILABLE')) return error;
  const details = error.details ?? {};
  if (details.refused === true || details.mayHaveRun === true) return error;
  return new WsError(error.code, error.message, {
    cause: error.cause,
    details: { ...details, mayHaveRun: true },
  });
}
