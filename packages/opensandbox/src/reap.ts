import { Sandbox, type SandboxInfo, SandboxManager } from '@alibaba-group/opensandbox';
import { type GcOptions, type GcReport, WsError } from '@ws/core';
import {
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
import { translateOpenSandboxError } from './errors.js';
import { timeOfMetadata } from './metadata-time.js';
import {
  ATTACHED_DIR,
  connectionOf,
  DEFAULT_OPENSANDBOX_TIMEOUT_MS,
  OPENSANDBOX_WORKDIR,
  type OpenSandboxConnection,
} from './opensandbox-provider.js';
import { OpenSandboxSandbox } from './opensandbox-sandbox.js';

/** Options of {@link gcOpenSandbox}. */
export interface OpenSandboxGcOptions extends GcOptions, OpenSandboxConnection {
  /**
   * The `timeoutMs` the workspaces were given: an attachment record older than this belongs to a host
   * that went away. Default: 300 000, the workspaces' default.
   */
  staleAfterMs?: number | undefined;
}

// States in which a sandbox still holds files and can be reaped; the others are on their way out.
const REAPABLE = ['Running', 'Paused'];

/**
 * Reaps sandboxes that OpenSandbox workspaces left behind: those carrying this project's metadata
 * (`ws.workspace.id`, narrowed to `owner`'s `ws.owner` when given) that are not in use and have been
 * idle for `olderThanMs`. Sandboxes without `ws.workspace.id` are never looked at.
 *
 * A running sandbox is in use while a workspace object on any host keeps its attachment record in it
 * fresh (stale after `staleAfterMs`); otherwise it is idle since the newest of its creation and the
 * last touch of a record. A paused sandbox is idle since the workspace that paused it stamped
 * `ws.released` (the listing does not say when a sandbox paused); one paused from outside, without
 * the stamp, since its creation.
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options; `BACKEND_UNAVAILABLE` or `PERMISSION_DENIED` when
 *   the sandboxes cannot be listed; `ABORTED` when `signal` fires (with the report so far in
 *   `details.report`).
 */
export async function gcOpenSandbox(options: OpenSandboxGcOptions): Promise<GcReport> {
  refuseRenamedOptions('gcOpenSandbox', options, { connectionConfig: 'client' });
  const checked = checkGcOptions(options);
  const staleMs = checked.staleAfterMs ?? DEFAULT_OPENSANDBOX_TIMEOUT_MS;
  if (typeof staleMs !== 'number' || !(staleMs > 0))
    throw new WsError('INVALID_ARGUMENT', `staleAfterMs must be a positive number, not ${String(staleMs)}`);
  const ledger = new GcLedger(checked);
  const connection = connectionOf(checked);
  const manager = SandboxManager.create({ connectionConfig: connection });
  try {
    const found = await list(manager, checked.owner);
    await reapCandidates(
      ledger,
      found.map((info) => candidate(manager, info, connection, staleMs)),
      translateOpenSandboxError,
    );
  } finally {
    await manager.close().catch(() => {});
  }
  return ledger.report();
}

/** What the reaper decides about one listed sandbox. */
function candidate(
  manager: SandboxManager,
  info: SandboxInfo,
  connection: ReturnType<typeof connectionOf>,
  staleMs: number,
): ReapCandidate {
  const metadata = info.metadata ?? {};
  const created = Math.max(timeOfMetadata(metadata[WS_LABELS.created]), timeOf(info.createdAt));
  const state = info.status.state;
  const probeRecords = async (signal?: AbortSignal): Promise<ReapProbe> => {
    const records = await probe(info.id, connection, staleMs, signal);
    return { inUse: records.fresh, lastUsedAt: records.lastTouchedAt };
  };
  return {
    kind: 'sandbox',
    name: info.id,
    workspaceId: metadata[WS_LABELS.id],
    owner: metadata[WS_LABELS.owner],
    userId: metadata[WS_LABELS.user],
    agentId: metadata[WS_LABELS.agent],
    idleSince: state === 'Paused' ? Math.max(created, timeOfMetadata(metadata[WS_LABELS.released])) : created,
    // Starting, pausing or resuming: someone is working on it now.
    busy: !REAPABLE.includes(state),
    ...(state === 'Running' ? { probe: probeRecords } : {}),
    takenMeanwhile: async (signal) => {
      const current = (await manager.getSandboxInfo(info.id)).status.state;
      return current !== state || (current === 'Running' && (await probeRecords(signal)).inUse);
    },
    remove: () =>
      manager.killSandbox(info.id).catch((error: unknown) => {
        // Killed by someone else meanwhile: nothing left to reap.
        if (!translateOpenSandboxError(error, 'killing').details?.lost) throw error;
      }),
  };
}

/** Every sandbox carrying this project's metadata (and the owner's tag, when given), in any state. */
async function list(manager: SandboxManager, owner: string | undefined): Promise<SandboxInfo[]> {
  const found: SandboxInfo[] = [];
  try {
    for (let page = 1; ; page++) {
      const listed = await manager.listSandboxInfos({
        ...(owner ? { metadata: { [WS_LABELS.owner]: owner } } : {}),
        page,
        pageSize: 100,
      });
      for (const info of listed.items) {
        // The filter is the server's; the check is ours: a sandbox without the marks is never touched.
        if (!info.metadata?.[WS_LABELS.id]) continue;
        if (owner !== undefined && info.metadata[WS_LABELS.owner] !== owner) continue;
        found.push(info);
      }
      if (!listed.pagination?.hasNextPage || listed.items.length === 0) return found;
    }
  } catch (error) {
    throw translateOpenSandboxError(error, 'listing the sandboxes');
  }
}

/** The attachment records of a running sandbox (see `Attachments` in @ws/core). */
async function probe(
  sandboxId: string,
  connection: ReturnType<typeof connectionOf>,
  staleMs: number,
  signal?: AbortSignal,
): ReturnType<typeof readAttachedRecords> {
  const sandbox = await Sandbox.connect({ sandboxId, connectionConfig: connection });
  try {
    return await readAttachedRecords(
      new OpenSandboxSandbox(sandbox, OPENSANDBOX_WORKDIR, {}),
      ATTACHED_DIR,
      staleMs,
      signal,
    );
  } finally {
    await sandbox.close().catch(() => {});
  }
}

/** The OpenSandbox backend's {@link Reaper}, with the connection fixed once. */
export function openSandboxReaper(defaults: Omit<OpenSandboxGcOptions, keyof GcOptions> = {}): Reaper {
  return { gc: (options) => gcOpenSandbox({ ...defaults, ...options }) };
}
