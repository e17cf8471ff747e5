import { readdir, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { GcOptions, GcReport } from '@ws/core';
import {
  checkGcOptions,
  fromErrno,
  GcLedger,
  processAlive,
  type ReapCandidate,
  type Reaper,
  reapCandidates,
  WS_LABELS,
} from '@ws/core/backend';
import Docker from 'dockerode';
import { liveAttachments } from './attachments.js';
import { dockerRuntimeDir } from './docker-provider.js';
import { engineUnreachable, statusOf, translateDockerError } from './errors.js';

/**
 * Force-removes every workspace container carrying the owner tag `owner` (the `owner` option of
 * `DockerWorkspace`), running or not, with each one's runtime folder on this host (its sockets and
 * attachment records, under `options.hostRuntimeDir` when the workspaces were given one), and
 * returns their names. Files in bind mounts and volumes stay.
 */
export async function removeOwnedContainers(
  owner: string,
  docker: Docker | Docker.DockerOptions = new Docker(),
  options: {
    /** The `hostRuntimeDir` the workspaces were given, if any. */
    readonly hostRuntimeDir?: string | undefined;
  } = {},
): Promise<string[]> {
  const client = docker instanceof Docker ? docker : new Docker(docker);
  const found = await client.listContainers({
    all: true,
    filters: { label: [`${WS_LABELS.workspace}=true`, `${WS_LABELS.owner}=${owner}`] },
  });
  await Promise.all(
    found.map(async (info) => {
      await client
        .getContainer(info.Id)
        .remove({ force: true })
        .catch((error: unknown) => {
          // Another process may have removed it meanwhile.
          if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
        });
      const workspaceId = info.Labels?.[WS_LABELS.id];
      // The folder is named by a hash of the id: a hostile label cannot point it elsewhere.
      if (workspaceId)
        await rm(dockerRuntimeDir(workspaceId, options.hostRuntimeDir), { recursive: true, force: true });
    }),
  );
  return found.map((info) => (info.Names[0] ?? info.Id).replace(/^\//, ''));
}

/** Options of {@link gcDocker}. */
export interface DockerGcOptions extends GcOptions {
  /** An existing dockerode client (never closed here), or options for a new one. Default: the local engine. */
  client?: Docker | Docker.DockerOptions | undefined;
  /** The `hostRuntimeDir` the workspaces were given, if any. */
  hostRuntimeDir?: string | undefined;
}

/** When the folder's attachment records last changed (an object attached or detached), in ms. */
async function lastAttached(runtime: string): Promise<number> {
  return stat(join(runtime, 'users')).then(
    (info) => info.mtimeMs,
    () => 0,
  );
}

/**
 * Whether a live process uses the container: an open workspace object on this host (its record in
 * the runtime folder), or a command running in it, such as the gateway an open workspace keeps (its
 * attached stream ends when the host process dies, and the gateway with it), so that a workspace open
 * on another host counts too.
 */
async function inUse(
  docker: Docker,
  container: Docker.Container,
  runtime: string | undefined,
): Promise<boolean> {
  if (runtime !== undefined && (await liveAttachments(join(runtime, 'users'))) > 0) return true;
  const info = await container.inspect().catch((error: unknown) => {
    if (statusOf(error) === 404) return undefined;
    throw error;
  });
  if (!info?.State.Running) return false;
  for (const execId of info.ExecIDs ?? []) {
    // An exec that finished (or was cleaned up meanwhile) does not count.
    const exec = await docker
      .getExec(execId)
      .inspect()
      .catch(() => undefined);
    if (exec?.Running) return true;
  }
  return false;
}

/**
 * Reaps what Docker workspaces left behind, typically by a service that crashed: containers carrying
 * this project's labels (`ws.workspace`, narrowed to `owner`'s `ws.owner` tag when given) that no live
 * process uses and that nobody attached to for `olderThanMs`, with their runtime folders on this host.
 * Without `owner`, also runtime folders whose container is gone and temporary files of killed writers
 * in the shared gateway folder. Files in bind-mounted folders and volumes stay.
 *
 * A container counts as in use while a workspace object on this host has it open (whether or not a
 * manager's lease is held, an open workspace is never reaped) or while a command runs in it (the
 * gateway of a workspace open on another host, a long call).
 *
 * @throws WsError `INVALID_ARGUMENT` for bad options, `BACKEND_UNAVAILABLE` when the engine does not
 *   answer, `ABORTED` when `signal` fires (with the report so far in `details.report`).
 */
export async function gcDocker(options: DockerGcOptions): Promise<GcReport> {
  const now = Date.now();
  const checked = checkGcOptions(options);
  const ledger = new GcLedger(checked);
  const docker =
    checked.client instanceof Docker ? checked.client : new Docker(checked.client as Docker.DockerOptions);
  try {
    await docker.ping();
  } catch (error) {
    throw engineUnreachable(error);
  }
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${WS_LABELS.workspace}=true`] },
  });
  const claimed = new Set<string>();
  for (const info of found) {
    const workspaceId = info.Labels?.[WS_LABELS.id];
    if (workspaceId) claimed.add(dockerRuntimeDir(workspaceId, checked.hostRuntimeDir));
  }
  const candidates: ReapCandidate[] = [];
  for (const info of found) {
    const owner = info.Labels?.[WS_LABELS.owner];
    if (checked.owner !== undefined && owner !== checked.owner) continue;
    const workspaceId = info.Labels?.[WS_LABELS.id] || undefined;
    const runtime = workspaceId ? dockerRuntimeDir(workspaceId, checked.hostRuntimeDir) : undefined;
    const container = docker.getContainer(info.Id);
    const name = (info.Names[0] ?? info.Id).replace(/^\//, '');
    candidates.push({
      kind: 'container',
      name,
      workspaceId,
      owner,
      userId: info.Labels?.[WS_LABELS.user],
      agentId: info.Labels?.[WS_LABELS.agent],
      idleSince: Date.parse(info.Labels?.[WS_LABELS.created] ?? '') || info.Created * 1000,
      probe: async () => ({
        inUse: await inUse(docker, container, runtime),
        lastUsedAt: runtime ? await lastAttached(runtime) : 0,
      }),
      // A process may have attached while the others were examined.
      takenMeanwhile: () => inUse(docker, container, runtime),
      remove: async () => {
        await container.remove({ force: true }).catch((error: unknown) => {
          if (statusOf(error) !== 404) throw error;
        });
        if (runtime) await rm(runtime, { recursive: true, force: true }).catch(() => {});
      },
    });
  }
  await reapCandidates(ledger, candidates, translateDockerError);
  if (checked.owner === undefined) await reapHostLeftovers(ledger, claimed, now, checked.hostRuntimeDir);
  return ledger.report();
}

/** Runtime folders whose container is gone, and half-written gateway bundles of killed processes. */
async function reapHostLeftovers(
  ledger: GcLedger,
  claimed: ReadonlySet<string>,
  now: number,
  hostRuntimeDir: string | undefined,
): Promise<void> {
  const base = dirname(dockerRuntimeDir('-', hostRuntimeDir));
  const candidates: ReapCandidate[] = [];
  const removeFile = (path: string) => () =>
    rm(path, { recursive: true, force: true }).catch((error: unknown) => {
      throw fromErrno(error, `Removing ${path} failed`, { path });
    });
  for (const name of await readdir(base).catch(() => [] as string[])) {
    const path = join(base, name);
    if (!/^[0-9a-f]{16}$/.test(name) || claimed.has(path)) continue;
    const since = Math.max(
      await lastAttached(path),
      await stat(path).then(
        (info) => info.mtimeMs,
        () => 0,
      ),
    );
    candidates.push({
      kind: 'runtime-folder',
      name: path,
      idleSince: since,
      probe: async () => ({ inUse: (await liveAttachments(join(path, 'users'))) > 0 }),
      remove: removeFile(path),
    });
  }
  const gateway = join(base, 'gateway');
  for (const name of await readdir(gateway).catch(() => [] as string[])) {
    const pid = /\.(\d+)\.tmp$/.exec(name)?.[1];
    if (pid === undefined) continue;
    const path = join(gateway, name);
    candidates.push({
      kind: 'temporary-file',
      name: path,
      idleSince: await stat(path).then(
        (info) => info.mtimeMs,
        () => now,
      ),
      probe: async () => ({ inUse: processAlive(Number(pid)) }),
      remove: removeFile(path),
    });
  }
  await reapCandidates(ledger, candidates);
}

/** The Docker backend's {@link Reaper}, with the client and runtime folder fixed once. */
export function dockerReaper(defaults: Omit<DockerGcOptions, keyof GcOptions> = {}): Reaper {
  return { gc: (options) => gcDocker({ ...defaults, ...options }) };
}
