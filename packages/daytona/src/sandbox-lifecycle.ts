import type { Daytona, Sandbox } from '@daytonaio/sdk';
import { WsError } from '@ws/core';
import { type RetryOptions, WS_LABELS, withRetry } from '@ws/core/backend';
import { type DaytonaConnection, newClient } from './client.js';
import { isStateRefusal, translateDaytonaError } from './errors.js';

/** States a sandbox leaves by itself: waited out. */
export const STARTING = new Set([
  'creating',
  'restoring',
  'starting',
  'resuming',
  'pulling_snapshot',
  'pending_build',
  'building_snapshot',
]);
export const STOPPING = new Set(['stopping', 'pausing', 'archiving']);
/** States `start()` brings back. */
const STOPPED = new Set(['stopped', 'archived', 'paused']);
/** States of a sandbox on its way out: never picked. */
const GONE = new Set(['destroying', 'destroyed', 'build_failed']);

/**
 * When the service created the sandbox: its own clock, so that every host orders the sandboxes of an
 * id alike (the label is the creating host's clock, a fallback only).
 */
function createdAt(sandbox: Sandbox): number {
  return Date.parse(sandbox.createdAt ?? '') || Date.parse(sandbox.labels?.[WS_LABELS.created] ?? '') || 0;
}

/**
 * Every sandbox carrying the workspace id and the owner tag (except those being deleted), newest
 * first: another owner's sandbox of the same id is never opened, stopped or deleted. A failed
 * listing is an error, never "none", which would create a second sandbox for the id.
 */
export function findSandboxes(
  daytona: Daytona,
  workspaceId: string,
  owner: string,
  retries: Pick<RetryOptions, 'onRetry'> = {},
): Promise<Sandbox[]> {
  // A listing is safe to send again: a failing or throttling service is tried a few times.
  return withRetry(() => findOnce(daytona, workspaceId, owner), { safe: true, ...retries });
}

async function findOnce(daytona: Daytona, workspaceId: string, owner: string): Promise<Sandbox[]> {
  const found: Sandbox[] = [];
  try {
    const labels = { [WS_LABELS.id]: workspaceId, [WS_LABELS.owner]: owner };
    for await (const sandbox of daytona.list({ labels, limit: 100 })) {
      // The filter is the service's; the check is ours (a sandbox of another id or owner is never touched).
      if (sandbox.labels?.[WS_LABELS.id] !== workspaceId || sandbox.labels?.[WS_LABELS.owner] !== owner)
        continue;
      if (GONE.has(sandbox.state ?? '')) continue;
      found.push(sandbox);
    }
  } catch (error) {
    throw translateDaytonaError(error, 'listing the sandboxes');
  }
  return found.sort((a, b) => createdAt(b) - createdAt(a) || (a.id < b.id ? -1 : 1));
}

/**
 * Brings a found sandbox to `started`: a stopped, archived or paused one is started, one on its way
 * there is waited for, a recoverable error is recovered; any other error is `BACKEND_ERROR`.
 */
export function readySandbox(
  sandbox: Sandbox,
  timeoutSeconds: number,
  retries: Pick<RetryOptions, 'onRetry'> = {},
): Promise<Sandbox> {
  // Starting a sandbox is safe to ask again (a started one stays started).
  return withRetry(() => readyOnce(sandbox, timeoutSeconds), { safe: true, ...retries });
}

async function readyOnce(sandbox: Sandbox, timeoutSeconds: number): Promise<Sandbox> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  const left = () => Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
  try {
    for (;;) {
      const state = sandbox.state ?? 'unknown';
      if (state === 'started') return sandbox;
      if (Date.now() > deadline)
        throw new WsError(
          'TIMEOUT',
          `The Daytona sandbox ${sandbox.id} stayed ${state} for ${timeoutSeconds} s`,
        );
      if (STOPPED.has(state)) await sandbox.start(left());
      else if (STARTING.has(state)) await sandbox.waitUntilStarted(left());
      else if (STOPPING.has(state)) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        await sandbox.refreshData();
      } else if (state === 'error' && sandbox.recoverable) await sandbox.recover(left());
      else
        throw new WsError(
          'BACKEND_ERROR',
          `The Daytona sandbox ${sandbox.id} is ${state}${sandbox.errorReason ? ` (${sandbox.errorReason})` : ''} and cannot be started`,
          { details: { sandboxId: sandbox.id, state } },
        );
      if (!STOPPING.has(state)) await sandbox.refreshData();
    }
  } catch (error) {
    throw translateDaytonaError(error, `starting sandbox ${sandbox.id}`);
  }
}

/**
 * Deletes a sandbox and waits until it is gone. One that another hand is changing (stopping, starting:
 * the service refuses with 409) is waited for and deleted then, as is one being deleted already; a
 * refusal by a rate limit is sent again. Gone already is `details.lost`.
 */
export async function deleteSandbox(sandbox: Sandbox, timeoutSeconds: number): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  const left = () => Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
  for (;;) {
    const refused = await withRetry(
      async () => {
        try {
          await sandbox.delete(left(), true);
          return false;
        } catch (error) {
          if (isStateRefusal(error) && Date.now() < deadline) return true;
          throw translateDaytonaError(error, `deleting sandbox ${sandbox.id}`);
        }
      },
      { safe: false },
    );
    if (!refused) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
    try {
      await sandbox.refreshData();
    } catch (error) {
      throw translateDaytonaError(error, `deleting sandbox ${sandbox.id}`);
    }
  }
}

/**
 * Deletes the sandboxes whose labels name `owner` (all of them, in any state), and returns their
 * ids: for tests and for cleaning up after a crashed service.
 */
export async function deleteOwnedSandboxes(
  owner: string,
  connection: DaytonaConnection = {},
): Promise<string[]> {
  if (!owner) throw new WsError('INVALID_ARGUMENT', 'An owner tag is required');
  const daytona = newClient(connection);
  try {
    const owned: Sandbox[] = [];
    for await (const sandbox of daytona.list({ labels: { [WS_LABELS.owner]: owner }, limit: 100 }))
      if (sandbox.labels?.[WS_LABELS.owner] === owner) owned.push(sandbox);
    await Promise.all(owned.map((sandbox) => sandbox.delete(120).catch(() => {})));
    return owned.map((sandbox) => sandbox.id);
  } finally {
    await daytona[Symbol.asyncDispose]();
  }
}
