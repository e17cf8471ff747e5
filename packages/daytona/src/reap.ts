import type { Daytona, Sandbox } from '@daytonaio/sdk';
import type { GcOptions, GcReport } from '@ws/core';
import {
  type AttachedRecords,
  checkGcOptions,
  GcLedger,
  type GcResource,
  type Reaper,
  readAttachedRecords,
} from '@ws/core/backend';
import { type DaytonaConnection, newClient } from './client.js';
import { DEFAULT_DAYTONA_TIMEOUT_MS, STALE_RECORD_MS } from './daytona-provider.js';
import { DaytonaSandbox } from './daytona-sandbox.js';
import { translateDaytonaError } from './errors.js';
import { LABELS, STARTING, STOPPING } from './sandbox-lifecycle.js';

/** Options of {@link gcDaytona}. */
export interface DaytonaGcOptions extends GcOptions, DaytonaConnection {
  /** An existing SDK client (never closed here). Default: a new one from the connection options. */
  client?: Daytona | undefined;
  /** How long deleting one sandbox may take, in ms. Default: 300 000. */
  timeoutMs?: number | undefined;
}

/** States of a sandbox being deleted: not listed. */
const DELETING = new Set(['destroying', 'destroyed']);

const time = (value: string | undefined): number => Date.parse(value ?? '') || 0;

/**
 * Reaps sandboxes that Daytona workspaces left behind: those carrying this project's labels
 * (`ws.workspace.id`, narrowed to `owner`'s `ws.owner` when given) that are not in use and have been
 * idle for `olderThanMs`. Sandboxes without `ws.workspace.id` are never looked at.
 *
 * A started sandbox is in use while a workspace object on any host keeps its attachment record in it
 * fresh (touched every minute, stale after three); otherwise it is idle since the newest of its
 * creation, its last state change, its last toolbox activity and the last touch of a record. A stopped,
 * archived or failed sandbox is idle since its last state change (or creation). One starting or
 * stopping is in use: someone is changing it.
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options; `BACKEND_UNAVAILABLE` or `PERMISSION_DENIED` when
 *   the sandboxes cannot be listed; `ABORTED` when `signal` fires (with the report so far in
 *   `details.report`).
 */
export async function gcDaytona(options: DaytonaGcOptions): Promise<GcReport> {
  const checked = checkGcOptions(options);
  const ledger = new GcLedger(checked);
  const timeoutSeconds = Math.ceil((checked.timeoutMs ?? DEFAULT_DAYTONA_TIMEOUT_MS) / 1000);
  const daytona = checked.client ?? newClient(checked);
  try {
    for (const sandbox of await list(daytona, checked.owner)) {
      ledger.throwIfAborted();
      const now = Date.now();
      const labels = sandbox.labels ?? {};
      const since = Math.max(time(labels[LABELS.created]), time(sandbox.createdAt), time(sandbox.updatedAt));
      const resource = (idleSince: number): GcResource => ({
        kind: 'sandbox',
        name: sandbox.id,
        workspaceId: labels[LABELS.id],
        owner: labels[LABELS.owner],
        idleMs: Math.max(0, now - idleSince),
      });
      let idle = resource(since);
      try {
        const state = sandbox.state ?? 'unknown';
        if (STARTING.has(state) || STOPPING.has(state)) {
          ledger.keep(idle, 'in-use');
          continue;
        }
        if (state === 'started') {
          const records = await probe(sandbox, checked.signal);
          idle = resource(Math.max(since, time(sandbox.lastActivityAt), records.lastTouchedAt ?? 0));
          if (records.fresh) {
            ledger.keep(idle, 'in-use');
            continue;
          }
        }
        if (idle.idleMs < checked.olderThanMs) ledger.keep(idle, 'young');
        else if (checked.dryRun) ledger.remove(idle);
        else if (await takenMeanwhile(daytona, sandbox, checked.signal)) ledger.keep(idle, 'in-use');
        else {
          await sandbox.delete(timeoutSeconds).catch((error: unknown) => {
            // Deleted by someone else meanwhile: nothing left to reap.
            if (!translateDaytonaError(error, 'deleting').details?.lost) throw error;
          });
          ledger.remove(idle);
        }
      } catch (error) {
        if (checked.signal?.aborted) ledger.throwIfAborted();
        ledger.keep(idle, 'failed', translateDaytonaError(error, `reaping sandbox ${sandbox.id}`));
      }
    }
  } finally {
    if (daytona !== checked.client) await daytona[Symbol.asyncDispose]().catch(() => {});
  }
  return ledger.report();
}

/** Every sandbox carrying this project's labels (and the owner's tag, when given), not being deleted. */
async function list(daytona: Daytona, owner: string | undefined): Promise<Sandbox[]> {
  const found: Sandbox[] = [];
  try {
    for await (const sandbox of daytona.list({
      ...(owner ? { labels: { [LABELS.owner]: owner } } : {}),
      limit: 100,
    })) {
      // The filter is the service's; the check is ours: a sandbox without the marks is never touched.
      if (!sandbox.labels?.[LABELS.id]) continue;
      if (owner !== undefined && sandbox.labels[LABELS.owner] !== owner) continue;
      if (DELETING.has(sandbox.state ?? '')) continue;
      found.push(sandbox);
    }
  } catch (error) {
    throw translateDaytonaError(error, 'listing the sandboxes');
  }
  return found;
}

/** The attachment records of a started sandbox (see `Attachments` in @ws/core). */
async function probe(sandbox: Sandbox, signal?: AbortSignal): Promise<AttachedRecords> {
  const home = (await sandbox.getUserHomeDir()) || '/home/daytona';
  const direct = new DaytonaSandbox(sandbox, `${home}/workspace`, {});
  return readAttachedRecords(direct, `${home}/.ws/attached`, STALE_RECORD_MS, signal);
}

/** Looked at again just before deleting: a host may have started or opened it meanwhile. */
async function takenMeanwhile(daytona: Daytona, seen: Sandbox, signal?: AbortSignal): Promise<boolean> {
  const current = await daytona.get(seen.id);
  const state = current.state ?? 'unknown';
  if (STARTING.has(state)) return true;
  if (state !== 'started') return false;
  if (seen.state !== 'started') return true;
  return (await probe(current, signal)).fresh;
}

/** The Daytona backend's {@link Reaper}, with the connection or client fixed once. */
export function daytonaReaper(defaults: Omit<DaytonaGcOptions, keyof GcOptions> = {}): Reaper {
  return { gc: (options) => gcDaytona({ ...defaults, ...options }) };
}
