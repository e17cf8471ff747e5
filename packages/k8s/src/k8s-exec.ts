import { PassThrough, Writable } from 'node:stream';
import type { Exec, V1Status } from '@kubernetes/client-node';
import { isWsError, WsError } from '@ws/core';

/** The one subprotocol that can close a command's stdin and keep reading its output. */
export const CLOSE_CAPABLE_PROTOCOL = 'v5.channel.k8s.io';
/** Output bytes handed on and not yet taken, above which the WebSocket stops reading. */
const HIGH_WATER = 4 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;
/** Input bytes queued on the WebSocket above which writing waits. */
const SEND_HIGH_WATER = 1024 * 1024;

/** Where a command runs. */
export interface PodTarget {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  /** How long an exec connection may take to open; default: no limit. */
  readonly connectTimeoutMs?: number | undefined;
}

/**
 * Waits for an exec connection to open, at most `target.connectTimeoutMs`: a connection still
 * opening then fails the call (the server may have started the command, so it is never sent again),
 * and is closed when it opens late.
 */
async function openWithin<T extends { close(): void }>(
  connecting: Promise<T>,
  target: PodTarget,
): Promise<T> {
  const ms = target.connectTimeoutMs;
  if (ms === undefined) return connecting;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new WsError(
            'BACKEND_UNAVAILABLE',
            `The exec connection to Pod ${target.pod} did not open within ${ms} ms (requestTimeoutMs); the command may have run`,
            { details: { pod: target.pod, timedOut: true, mayHaveRun: true } },
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([connecting, late]);
  } catch (error) {
    connecting.then(
      (socket) => socket.close(),
      () => {},
    );
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** How a command started by {@link startPodExec} ended. */
export interface PodExecEnd {
  /** The command's exit code, from the `Status` on channel 3. */
  readonly exitCode: number;
}

/** A command running in a Pod over one exec WebSocket. */
export interface PodExec {
  /** The negotiated subprotocol (`v5.channel.k8s.io` closes stdin without closing the socket). */
  readonly protocol: string;
  /** Settles once the Status arrived and every output chunk was handed on; rejects when the socket broke first. */
  readonly ended: Promise<PodExecEnd>;
  /** Sends input; resolves once the WebSocket has room again. Only for a command started with stdin. */
  write(chunk: Uint8Array): Promise<void>;
  /** Ends the input (the v5 close frame). */
  closeStdin(): void;
  /** Closes the WebSocket (the command itself is not stopped by this). */
  close(): void;
}

/** Callbacks of {@link startPodExec}; a returned promise holds the socket's reading back until it settles. */
export interface PodExecHandlers {
  readonly stdin: boolean;
  onStdout(chunk: Uint8Array): void | Promise<void>;
  onStderr(chunk: Uint8Array): void | Promise<void>;
}

type Socket = Awaited<ReturnType<Exec['exec']>>;

/** The exit code in an exec Status: 0 on Success, the `ExitCode` cause on a non-zero exit. */
export function exitCodeOf(status: V1Status): number | WsError {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((item) => item.reason === 'ExitCode');
  const code = Number(cause?.message);
  if (status.reason === 'NonZeroExitCode' && Number.isInteger(code)) return code;
  return new WsError(
    'BACKEND_ERROR',
    `The Pod could not run the command: ${status.message ?? status.reason}`,
    {
      details: { reason: status.reason },
    },
  );
}

/** The WsError for a failed exec upgrade: the Pod or its container is gone (400/404), or access is refused. */
export function execConnectError(error: unknown, target: PodTarget): WsError {
  const text =
    (error as { message?: string })?.message ?? (error as { error?: Error })?.error?.message ?? String(error);
  const status = Number(/Unexpected server response: (\d+)/.exec(text)?.[1]);
  if (status === 401 || status === 403)
    return new WsError('PERMISSION_DENIED', `Kubernetes refused exec in Pod ${target.pod}: ${text}`, {
      cause: error,
      details: { pod: target.pod },
    });
  if (status === 400 || status === 404)
    return new WsError(
      'BACKEND_UNAVAILABLE',
      `The Pod ${target.pod} is gone or not running (exec refused: ${text}); initialize() again to re-create it`,
      { cause: error, details: { pod: target.pod, lost: true } },
    );
  return new WsError('BACKEND_UNAVAILABLE', `Exec in Pod ${target.pod} failed: ${text}`, {
    cause: error,
    details: { pod: target.pod },
  });
}

/**
 * Runs argv in a Pod through client-node's `Exec` (no shell of Kubernetes' own): output is handed on
 * in order with back-pressure (the socket pauses while the handlers are behind), input goes in
 * `[0, …]` frames. A socket that closes before the Status arrives rejects `ended` with
 * `BACKEND_UNAVAILABLE` and `details.mayHaveRun`: the command may have run, so nothing is sent again.
 */
export async function startPodExec(
  exec: Exec,
  target: PodTarget,
  argv: readonly string[],
  handlers: PodExecHandlers,
): Promise<PodExec> {
  let socket: Socket | undefined;
  let pending = 0;
  let paused = false;
  let delivered: Promise<void> = Promise.resolve();
  let deliveryError: unknown;
  const deliver = (listener: (chunk: Uint8Array) => void | Promise<void>, chunk: Uint8Array) => {
    pending += chunk.byteLength;
    delivered = delivered
      .then(() => listener(chunk))
      .catch((error: unknown) => {
        deliveryError ??= error;
      })
      .then(() => {
        pending -= chunk.byteLength;
        if (paused && pending < LOW_WATER) {
          paused = false;
          socket?.resume();
        }
      });
    if (!paused && pending > HIGH_WATER && socket) {
      paused = true;
      socket.pause();
    }
  };
  const sink = (listener: (chunk: Uint8Array) => void | Promise<void>) =>
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        deliver(listener, chunk);
        callback();
      },
    });
  let status: V1Status | undefined;
  const stdin = handlers.stdin ? new PassThrough() : null;
  try {
    socket = await openWithin(
      exec.exec(
        target.namespace,
        target.pod,
        target.container,
        [...argv],
        sink(handlers.onStdout),
        sink(handlers.onStderr),
        stdin,
        false,
        (received) => {
          status = received;
        },
      ),
      target,
    );
  } catch (error) {
    if (isWsError(error)) throw error;
    throw execConnectError(error, target);
  }
  const opened = socket;
  const ended = new Promise<PodExecEnd>((resolve, reject) => {
    opened.once('close', () => {
      void delivered.then(() => {
        if (deliveryError !== undefined) return reject(deliveryError);
        if (status === undefined) {
          // Before v4 a success sends no Status; from v4 on a missing Status means the socket broke.
          if (opened.protocol !== CLOSE_CAPABLE_PROTOCOL && opened.protocol !== 'v4.channel.k8s.io')
            return resolve({ exitCode: 0 });
          return reject(
            new WsError(
              'BACKEND_UNAVAILABLE',
              `The exec connection to Pod ${target.pod} closed before the command's status arrived; it may have run`,
              { details: { pod: target.pod, mayHaveRun: true, lost: true } },
            ),
          );
        }
        const code = exitCodeOf(status);
        if (code instanceof WsError) reject(code);
        else resolve({ exitCode: code });
      });
    });
  });
  // Settled by the caller; never an unhandled rejection when it stops listening early.
  ended.catch(() => {});
  return {
    protocol: opened.protocol,
    ended,
    write: async (chunk) => {
      if (!stdin || stdin.writableEnded || opened.readyState !== opened.OPEN)
        throw new WsError('CONFLICT', 'The process no longer accepts input');
      stdin.write(chunk);
      while (opened.bufferedAmount > SEND_HIGH_WATER && opened.readyState === opened.OPEN)
        await new Promise((resolve) => setTimeout(resolve, 5));
    },
    closeStdin: () => {
      if (stdin && !stdin.writableEnded) stdin.end();
    },
    close: () => {
      if (paused) opened.resume();
      opened.close();
    },
  };
}
