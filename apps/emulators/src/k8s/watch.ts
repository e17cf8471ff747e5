import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ObjectMeta } from './labels.js';

/** How often a watch re-reads the objects it follows, in ms. */
const POLL_MS = 200;

/**
 * Serves `?watch=true` as newline-delimited `{type, object}` events by polling `read`: ADDED for what
 * exists (without a `resourceVersion`, or newer than it), MODIFIED when an object's resourceVersion
 * changes, DELETED once it is gone. Ends after `timeoutSeconds` or when the client goes away.
 */
export async function serveWatch(
  request: IncomingMessage,
  response: ServerResponse,
  query: URLSearchParams,
  read: () => Promise<Record<string, unknown>[]>,
  subscribe?: (listener: (type: string, object: Record<string, unknown>) => void) => () => void,
): Promise<void> {
  const since = Number(query.get('resourceVersion') ?? '0') || 0;
  const timeoutSeconds = Number(query.get('timeoutSeconds') ?? '0') || 0;
  const deadline = timeoutSeconds > 0 ? Date.now() + timeoutSeconds * 1000 : Number.POSITIVE_INFINITY;
  const known = new Map<string, { version: string; object: Record<string, unknown>; at: number }>();
  // Which poll an entry was last confirmed by; an event's entry may be newer than a read in flight.
  let generation = 0;
  /** Uids reported DELETED; a read that was in flight may still list them. */
  const gone = new Set<string>();
  let open = true;
  request.once('close', () => {
    open = false;
  });
  response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  // Headers go out now: the client's watch() resolves on them, maybe long before the first event.
  response.flushHeaders();
  const send = (type: string, object: Record<string, unknown>) =>
    response.write(`${JSON.stringify({ type, object })}\n`);
  let first = true;
  // Changes the store makes itself arrive as they happen (a poll could miss a short Pending).
  const unsubscribe = subscribe?.((type, object) => {
    const metadata = object.metadata as ObjectMeta & { resourceVersion: string };
    const previous = known.get(metadata.uid);
    if (type === 'DELETED') {
      if (!previous) return;
      known.delete(metadata.uid);
      gone.add(metadata.uid);
      send('DELETED', object);
      return;
    }
    if (previous && Number(previous.version) >= Number(metadata.resourceVersion)) return;
    known.set(metadata.uid, { version: metadata.resourceVersion, object, at: generation + 1 });
    send(previous ? 'MODIFIED' : 'ADDED', object);
  });
  try {
    await poll();
  } finally {
    unsubscribe?.();
  }
  response.end();

  async function poll(): Promise<void> {
    while (open && Date.now() < deadline) {
      const seen = new Set<string>();
      const current = ++generation;
      const objects = await read();
      for (const object of objects) {
        const metadata = object.metadata as ObjectMeta & { resourceVersion: string };
        const id = metadata.uid;
        seen.add(id);
        const previous = known.get(id);
        if (previous && Number(previous.version) > Number(metadata.resourceVersion)) continue;
        if (gone.has(id)) continue;
        known.set(id, { version: metadata.resourceVersion, object, at: current });
        if (!previous) {
          if (!first || Number(metadata.resourceVersion) > since) send('ADDED', object);
        } else if (previous.version !== metadata.resourceVersion) send('MODIFIED', object);
      }
      for (const [id, entry] of known) {
        if (seen.has(id) || entry.at > current) continue;
        known.delete(id);
        gone.add(id);
        send('DELETED', entry.object);
      }
      first = false;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}
