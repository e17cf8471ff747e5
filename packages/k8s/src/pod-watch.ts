import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** Changes of one Pod as the API server reports them (see {@link watchPod}). */
export interface PodChanges {
  /** Resolves at the next change reported since the last call (at once when one came meanwhile). */
  next(): Promise<void>;
  /** Ends the watch (idempotent). */
  stop(): void;
}

/**
 * Watches one Pod by name (a watch on the namespace's Pods narrowed by `metadata.name`), so that a
 * waiter re-reads it as soon as it changes rather than at its next poll. Best effort: a watch that
 * cannot start, is refused or ends only leaves the waiter to its polling, and what it reports is
 * never trusted, only taken as a hint to read the Pod again. It ends at `stop()` or after
 * `timeoutMs`, whichever comes first, and holds no connection after that.
 */
export function watchPod(config: KubeConfig, namespace: string, name: string, timeoutMs: number): PodChanges {
  let pending = false;
  let wake: (() => void) | undefined;
  const changed = () => {
    pending = true;
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  const ended = new AbortController();
  const timer = setTimeout(() => ended.abort(), timeoutMs);
  timer.unref();
  void (async () => {
    const cluster = config.getCurrentCluster();
    if (!cluster) return;
    const url = new URL(
      `${cluster.server.replace(/\/+$/, '')}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
    );
    url.searchParams.set('watch', 'true');
    url.searchParams.set('fieldSelector', `metadata.name=${name}`);
    url.searchParams.set('timeoutSeconds', String(Math.max(1, Math.ceil(timeoutMs / 1000))));
    const options: RequestOptions = { method: 'GET', headers: { accept: 'application/json' } };
    await config.applyToHTTPSOptions(options);
    if (ended.signal.aborted) return;
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      { ...options, signal: ended.signal },
      (response) => {
        response.on('error', () => {});
        if (response.statusCode !== 200) {
          response.resume();
          return;
        }
        // Each event is a line; any bytes mean something changed: the waiter reads the Pod itself.
        response.on('data', changed);
      },
    );
    request.on('error', () => {});
    request.end();
  })().catch(() => {});
  return {
    next: () => {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        wake = () => {
          pending = false;
          resolve();
        };
      });
    },
    stop: () => {
      clearTimeout(timer);
      ended.abort();
    },
  };
}
