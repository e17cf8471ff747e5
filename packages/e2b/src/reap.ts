import { type GcOptions, type GcReport, WsError } from '@ws/core';
import {
  checkGcOptions,
  GcLedger,
  type ReapCandidate,
  type Reaper,
  type ReapProbe,
  readAttachedRecords,
  reapCandidates,
  timeOf,
  WS_LABELS,
} from '@ws/core/backend';
import { type ConnectionOpts, Sandbox, type SandboxInfo } from 'e2b';
import { ATTACHED_DIR, DEFAULT_E2B_TIMEOUT_MS, E2B_WORKDIR } from './e2b-provider.js';
import { E2BSandbox } from './e2b-sandbox.js';
import { translateE2BError } from './errors.js';

/** Options of {@link gcE2B}. */
export interface E2BGcOptions extends GcOptions {
  /** The E2B API key. Default: `E2B_API_KEY`. */
  apiKey?: string | undefined;
  /** The control plane's URL. Default: `E2B_API_URL`, else `https://api.<domain>`. */
  apiUrl?: string | undefined;
  /** The E2B domain. Default: `E2B_DOMAIN`, else `e2b.app`. */
  domain?: string | undefined;
  /** One URL for every sandbox's envd (a self-hosted proxy, the emulator). Default: `E2B_SANDBOX_URL`. */
  sandboxUrl?: string | undefined;
  /** Time limit of each request to E2B, in ms. Default: the SDK's. */
  requestTimeoutMs?: number | undefined;
  /**
   * The `timeoutMs` the workspaces were given: an attachment record older than this belongs to a host
   * that went away. Default: 300 000, the workspaces' default.
   */
  staleAfterMs?: number | undefined;
}

/** The time limit a probe's connection asks for: connecting never shortens a running sandbox's. */
const PROBE_TIMEOUT_MS = 15_000;

/**
 * Reaps sandboxes that E2B workspaces left behind: those carrying this project's metadata
 * (`ws.workspace.id`, narrowed to `owner`'s `ws.owner` when given) that are not in use and have been
 * idle for `olderThanMs`. Sandboxes without `ws.workspace.id` are never looked at.
 *
 * A running sandbox is in use while a workspace object on any host keeps its attachment record in it
 * fresh (touched every third of the workspace's time limit; stale after `staleAfterMs`); otherwise it
 * is idle since the newest of its creation, its last start or resume, and the last touch of a record.
 * A paused sandbox is idle since it was paused: E2B's listing does not say when, so the end of its
 * last time limit (`endAt`, the latest it can have been paused) is taken, never an earlier time.
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options; `BACKEND_UNAVAILABLE` or `PERMISSION_DENIED` when
 *   the sandboxes cannot be listed; `ABORTED` when `signal` fires (with the report so far in
 *   `details.report`).
 */
export async function gcE2B(options: E2BGcOptions): Promise<GcReport> {
  const checked = checkGcOptions(options);
  const staleMs = checked.staleAfterMs ?? DEFAULT_E2B_TIMEOUT_MS;
  if (typeof staleMs !== 'number' || !(staleMs > 0))
    throw new WsError('INVALID_ARGUMENT', `staleAfterMs must be a positive number, not ${String(staleMs)}`);
  const ledger = new GcLedger(checked);
  const connection = connectionOf(checked);
  const found = await list(connection, checked.owner, checked.signal).catch((error: unknown) => {
    // A signal that fired during the listing ends the run as ABORTED, not as the listing's failure.
    ledger.throwIfAborted();
    throw error;
  });
  await reapCandidates(
    ledger,
    found.map((info) => candidate(info, connection, staleMs)),
    translateE2BError,
  );
  return ledger.report();
}

/** What the reaper decides about one listed sandbox. */
function candidate(info: SandboxInfo, connection: ConnectionOpts, staleMs: number): ReapCandidate {
  const metadata = info.metadata ?? {};
  const created = Math.max(timeOf(metadata[WS_LABELS.created]), timeOf(info.startedAt));
  const running = info.state === 'running';
  const probeRecords = async (signal?: AbortSignal): Promise<ReapProbe> => {
    const records = await probe(info.sandboxId, connection, staleMs, signal);
    return { inUse: records.fresh, lastUsedAt: records.lastTouchedAt };
  };
  return {
    kind: 'sandbox',
    name: info.sandboxId,
    workspaceId: metadata[WS_LABELS.id],
    owner: metadata[WS_LABELS.owner],
    userId: metadata[WS_LABELS.user],
    agentId: metadata[WS_LABELS.agent],
    // A paused sandbox's pause time is not listed: the end of its last time limit is the latest it can be.
    idleSince: running ? created : Math.max(created, Math.min(timeOf(info.endAt), Date.now())),
    ...(running ? { probe: probeRecords } : {}),
    takenMeanwhile: async (signal) => {
      const current = await Sandbox.getInfo(info.sandboxId, connection);
      if (current.state !== 'running') return false;
      return !running || (await probeRecords(signal)).inUse;
    },
    // False: killed by someone else meanwhile, nothing left to reap.
    remove: async () => void (await Sandbox.kill(info.sandboxId, connection)),
  };
}

function connectionOf(options: E2BGcOptions): ConnectionOpts {
  const { apiKey, apiUrl, domain, sandboxUrl, requestTimeoutMs } = options;
  return {
    ...(apiKey ? { apiKey } : {}),
    ...(apiUrl ? { apiUrl } : {}),
    ...(domain ? { domain } : {}),
    ...(sandboxUrl ? { sandboxUrl } : {}),
    ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
  };
}

/** Every sandbox carrying this project's metadata (and the owner's tag, when given), running or paused. */
async function list(
  connection: ConnectionOpts,
  owner: string | undefined,
  signal: AbortSignal | undefined,
): Promise<SandboxInfo[]> {
  const found: SandboxInfo[] = [];
  try {
    const paginator = Sandbox.list({
      ...connection,
      ...(signal ? { signal } : {}),
      query: { ...(owner ? { metadata: { [WS_LABELS.owner]: owner } } : {}), state: ['running', 'paused'] },
      limit: 100,
    });
    while (paginator.hasNext)
      for (const info of (await paginator.nextItems()) as SandboxInfo[]) {
        // The filter is the service's; the check is ours: a sandbox without the marks is never touched.
        if (!info.metadata?.[WS_LABELS.id]) continue;
        if (owner !== undefined && info.metadata[WS_LABELS.owner] !== owner) continue;
        found.push(info);
      }
  } catch (error) {
    throw translateE2BError(error, 'listing the sandboxes');
  }
  return found;
}

/** The attachment records of a running sandbox (see `Attachments` in @ws/core). */
async function probe(
  sandboxId: string,
  connection: ConnectionOpts,
  staleMs: number,
  signal?: AbortSignal,
): ReturnType<typeof readAttachedRecords> {
  const sandbox = await Sandbox.connect(sandboxId, {
    ...connection,
    ...(signal ? { signal } : {}),
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  return readAttachedRecords(new E2BSandbox(sandbox, E2B_WORKDIR, {}), ATTACHED_DIR, staleMs, signal);
}

/** The E2B backend's {@link Reaper}, with the connection fixed once. */
export function e2bReaper(defaults: Omit<E2BGcOptions, keyof GcOptions> = {}): Reaper {
  return { gc: (options) => gcE2B({ ...defaults, ...options }) };
}
