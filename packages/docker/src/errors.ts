import { WsError } from '@ws/core';
import { vendorErrorMapper } from '@ws/core/backend';

/** An error of dockerode: the Engine API's status and its JSON body, or a socket's errno. */
export type DockerError = Error & {
  statusCode?: number;
  json?: { message?: string } | null;
  reason?: string;
  code?: string;
};

/** The Engine API status of a dockerode error (undefined for any other error). */
export const statusOf = (error: unknown): number | undefined => (error as DockerError)?.statusCode;

/**
 * The WsError for an error of the Docker engine, `(error, what, path?)`: an engine that cannot be
 * reached (its socket refused or missing) is `BACKEND_UNAVAILABLE`; a file error the engine names
 * (`… is a directory`, `… not a directory`, `… permission denied`) its code; anything else
 * `BACKEND_ERROR`. Whether a 404 is a missing file or a missing container needs the container's
 * state: `DockerSandbox` decides that before.
 */
export const translateDockerError = vendorErrorMapper({
  vendor: 'Docker',
  messageOf: (error) => {
    const typed = error as DockerError;
    return typed?.json?.message ?? typed?.reason ?? typed?.message ?? String(error);
  },
  classify(error) {
    const code = (error as DockerError)?.code;
    if (code === 'ECONNREFUSED' || code === 'ENOENT') return { kind: 'unreachable' };
    return undefined;
  },
});

/** The error for an engine that did not answer its ping: `BACKEND_UNAVAILABLE`, whatever the cause. */
export function engineUnreachable(error: unknown): WsError {
  return new WsError(
    'BACKEND_UNAVAILABLE',
    `The Docker engine cannot be reached: ${(error as Error)?.message ?? String(error)}`,
    {
      cause: error,
    },
  );
}
