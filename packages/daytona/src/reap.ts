import type { Daytona, Sandbox } from '@daytonaio/sdk';
import type { GcOptions, GcReport } from '@ws/core';
import {
  type AttachedRecords,
  checkGcOptions,
  GcLedger,
  type ReapCandidate,
  type Reaper,
  type ReapProbe,
  readAttachedRecords,
  reapCandidates,
  refuseRenamedOptions,
  timeOf,
  WS_LABELS,
} from '@ws/core/backend';
import { type DaytonaConnection, newClient } from './client.js';
import { DEFAULT_DAYTONA_LIFECYCLE_TIMEOUT_MS, STALE_RECORD_MS } from './daytona-provider.js';
import { DaytonaSandbox } from './daytona-sandbox.js';
import { translateDaytonaError } from './errors.js';
import { deleteSandbox, STARTING, STOPPING } from './sandbox-lifecycle.js';

/** Options of {@link gcDaytona}. */
export interface DaytonaGcOptions extends GcOptions, DaytonaConnection {
  /** An existing SDK client (never closed here). Default: a new one from the connection options. */
  client?: Daytona | undefined;
  /** How long deleting one sandbox may take, in ms. Default: 300 000. */
  lifecycleTimeoutMs?: number | undefined;
}

/** States of a sandbox being deleted: not listed. */
const DELETING = new Set(['destroying', 'destroyed']);

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
  refuseRenamedOptions('gcDaytona', options, { timeoutMs: 'lifecycleTimeoutMs' });
  const checked = checkGcOptions(options);
  const ledger = new GcLedger(checked);
  const timeoutSeconds = Math.ceil(
    (checked.lifecycleTimeoutMs ?? DEFAULT_DAYTONA_LIFECYCLE_TIMEOUT_MS) / 1000,
  );
  const daytona = checked.client ?? newClient(checked);
  try {
    const found = await list(daytona, checked.owner);
    await reapCandidates(
      ledger,
      found.map((sandbox) => candidate(daytona, sandbox, timeoutSeconds)),
      translateDaytonaError,
    );
  } finally {
    if (daytona !== checked.client) await daytona[Symbol.asyncDispose]().catch(() => {});
  }
  return ledger.report();
}

/** What the reaper decides about one listed sandbox. */
function candidate(daytona: Daytona, sandbox: Sandbox, timeoutSeconds: number): ReapCandidate {
  const labels = sandbox.labels ?? {};
  const since = Math.max(
    timeOf(labels[WS_LABELS.created]),
    timeOf(sandbox.createdAt),
    timeOf(sandbox.updatedAt),
  );
  const state = sandbox.state ?? 'unknown';
  return {
    kind: 'sandbox',
    name: sandbox.id,
    workspaceId: labels[WS_LABELS.id],
    owner: labels[WS_LABELS.owner],
    userId: labels[WS_LABELS.user],
    agentId: labels[WS_LABELS.agent],
    idleSince: since,
    // Starting or stopping: someone is changing it now.
    busy: STARTING.has(state) || STOPPING.has(state),
    ...(state === 'started'
      ? {
          probe: async (signal?: AbortSignal): Promise<ReapProbe> => {
            const records = await probe(sandbox, signal);
            return {
              inUse: records.fresh,
              lastUsedAt: Math.max(timeOf(sandbox.lastActivityAt), records.lastTouchedAt ?? 0),
            };
          },
        }
      : {}),
    takenMeanwhile: (signal) => takenMeanwhile(daytona, sandbox, signal),
    remove: () =>
      deleteSandbox(sandbox, timeoutSeconds).catch((error: unknown) => {
        // Deleted by someone else meanwhile: nothing left to reap.
        if (!translateDaytonaError(error, 'deleting').details?.lost) throw error;
      }),
  };
}

/** Every sandbox carrying this project's labels (and the owner's tag, when given), not being deleted. */
async function list(daytona: Daytona, owner: string | undefined): Promise<Sandbox[]> {
  const found: Sandbox[] = [];
  try {
    for await (const sandbox of daytona.list({
      ...(owner ? { labels: { [WS_LABELS.owner]: owner } } : {}),
      limit: 100,
    })) {
      // The filter is the service's; the check is ours: a sandbox without the marks is never touched.
      if (!sandbox.labels?.[WS_LABELS.id]) continue;
      if (owner !== undefined && sandbox.labels[WS_LABELS.owner] !== owner) continue;
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
