import { fromErrno, type WsError } from '../contracts/errors.js';
import type { GcLedger, GcResource } from '../manager/gc.js';

/** What a look inside a resource found: whether someone uses it, and when it was last used. */
export interface ReapProbe {
  /** A live workspace holds it (a fresh attachment record, a running command): it is kept. */
  readonly inUse: boolean;
  /** When it was last used, in ms since the epoch; moves its idle time forward. */
  readonly lastUsedAt?: number | undefined;
}

/** One thing a backend's reaper found, with what the shared loop needs to decide about it. */
export interface ReapCandidate {
  /** What kind of thing it is (`sandbox`, `container`, `pod`, `pvc`, …). */
  readonly kind: GcResource['kind'];
  /** Its name where it lives. */
  readonly name: string;
  /** The workspace it belongs to, when known. */
  readonly workspaceId?: string | undefined;
  /** Its owner tag, when it carries one. */
  readonly owner?: string | undefined;
  /** The user it was opened for, when it carries one (`ws.user`). */
  readonly userId?: string | undefined;
  /** The agent it was opened for, when it carries one (`ws.agent`). */
  readonly agentId?: string | undefined;
  /** When it was last used as its listing says, in ms since the epoch. */
  readonly idleSince: number;
  /** Someone is changing it now (starting, stopping, a Pod a host waits for): kept without a look. */
  readonly busy?: boolean | undefined;
  /** Looks inside for signs of use. Absent: only the listing's time counts. */
  probe?(signal?: AbortSignal): Promise<ReapProbe>;
  /** Looked at again just before removing: true when a host took it meanwhile. Absent: never. */
  takenMeanwhile?(signal?: AbortSignal): Promise<boolean>;
  /** Removes it; resolves when it is gone already (removed by someone else meanwhile). */
  remove(signal?: AbortSignal): Promise<void>;
}

/**
 * The decision every reaper makes, once for each candidate in order: kept `in-use` when busy or when
 * its probe finds a live user; kept `young` when idle for less than `olderThanMs`; in a dry run listed
 * as removed; otherwise looked at again (`takenMeanwhile`: kept `in-use`) and removed. A failure at any
 * step keeps it as `failed` with `translate`'s error, except that one found gone meanwhile (the
 * translated error's `details.lost`) is left out of the report: it is no longer there to list.
 * `translate` defaults to {@link fromErrno} (a WsError passes through; an errno becomes its code).
 *
 * @throws WsError `ABORTED` when the ledger's signal fires (with the report so far).
 */
export async function reapCandidates(
  ledger: GcLedger,
  candidates: Iterable<ReapCandidate> | AsyncIterable<ReapCandidate>,
  translate: (error: unknown, what: string) => WsError = (error, what) => fromErrno(error, `${what} failed`),
): Promise<void> {
  const { olderThanMs, dryRun, signal } = ledger.options;
  for await (const candidate of candidates) {
    ledger.throwIfAborted();
    const now = Date.now();
    let since = candidate.idleSince;
    const resource = (): GcResource => ({
      kind: candidate.kind,
      name: candidate.name,
      workspaceId: candidate.workspaceId,
      owner: candidate.owner,
      ...(candidate.userId !== undefined ? { userId: candidate.userId } : {}),
      ...(candidate.agentId !== undefined ? { agentId: candidate.agentId } : {}),
      idleMs: Math.max(0, now - since),
    });
    try {
      if (candidate.busy) {
        ledger.keep(resource(), 'in-use');
        continue;
      }
      if (candidate.probe) {
        const found = await candidate.probe(signal);
        since = Math.max(since, found.lastUsedAt ?? 0);
        if (found.inUse) {
          ledger.keep(resource(), 'in-use');
          continue;
        }
      }
      if (resource().idleMs < olderThanMs) ledger.keep(resource(), 'young');
      else if (dryRun) ledger.remove(resource());
      // Looked at again just before: a host may have opened it while the others were examined.
      else if (await candidate.takenMeanwhile?.(signal)) ledger.keep(resource(), 'in-use');
      else {
        await candidate.remove(signal);
        ledger.remove(resource());
      }
    } catch (error) {
      if (signal?.aborted) ledger.throwIfAborted();
      const translated = translate(error, `Reaping ${candidate.kind} ${candidate.name}`);
      if (translated.details?.lost === true) continue;
      ledger.keep(resource(), 'failed', translated);
    }
  }
}

/** A time a listing gives (an ISO string, a Date, nothing) in ms since the epoch; 0 when absent or unreadable. */
export function timeOf(value: string | Date | number | undefined | null): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : 0;
  if (value instanceof Date) return value.getTime() || 0;
  return Date.parse(value ?? '') || 0;
}
