import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pinnedSocketChannel } from '../backend/host-paths.js';
import { TailBuffer } from '../backend/streams.js';
import { WsError } from '../contracts/errors.js';
import type { Sandbox, SandboxProcess } from '../contracts/sandbox.js';
import type { GatewayChannel } from './client.js';
import { GATEWAY_START_TIMEOUT_MS, type GatewayLauncher, type LaunchedGateway } from './link.js';
import { MuxEndpoint } from './mux.js';
import { PortWatch, upgradeToMux } from './proxied.js';

/**
 * Where a gateway creates its socket, and how the host reaches it:
 * - `pinned`: `inside` is a folder the host also sees as `shared`; the host connects through a hard
 *   link of its own in `pinned` (see `pinSandboxSocket`), never through a name in `shared`;
 * - `relay`: the host reaches the socket through a command run in `sandbox` for each request;
 * - `stdio`: no socket; the gateway serves streams multiplexed over its own stdin and stdout (see
 *   `MuxEndpoint`), for a backend whose commands are slow to start or whose output is text. The
 *   host pings it every {@link STDIO_PING_MS}; a gateway that hears nothing for
 *   {@link STDIO_IDLE_EXIT_MS} exits, so one left by a host that died does not run on.
 */
export type GatewaySocketPlace =
  | {
      /** A socket in a folder both sides see, reached through the host's own hard link. */
      readonly kind: 'pinned';
      /** The folder, as a path inside the sandbox, where the gateway creates its socket. */
      readonly inside: string;
      /** The same folder, as a path on the host. */
      readonly shared: string;
      /** The host's private folder that holds its hard link to the socket. */
      readonly pinned: string;
    }
  | {
      /** A socket reached through a command run in the sandbox for each request. */
      readonly kind: 'relay';
      /** The folder, as a path inside the sandbox, where the gateway creates its socket. */
      readonly inside: string;
      /** The sandbox that runs the relay command. */
      readonly sandbox: Sandbox;
    }
  | {
      /** No socket: streams multiplexed over the gateway's stdin and stdout. */
      readonly kind: 'stdio';
    }
  | {
      /** A port on 127.0.0.1 inside the sandbox, reached through the vendor's reverse proxy. */
      readonly kind: 'proxied';
      /**
       * Where the host reaches a port inside the sandbox: an `http:`/`https:` base URL (a vendor's
       * reverse proxy, path prefix included) and the headers it wants.
       */
      endpoint(port: number): Promise<ProxiedEndpoint>;
    };

/** A port inside the sandbox as the host reaches it (see the `proxied` {@link GatewaySocketPlace}). */
export interface ProxiedEndpoint {
  /** `http://host:port/prefix` or `https://…`: the port's root. */
  readonly url: string;
  /** Headers every request to it must carry (a vendor's access token). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** How often the host and a gateway served over stdio ping each other. */
export const STDIO_PING_MS = 10_000;
/** How long a gateway served over stdio waits without hearing from the host before it exits. */
export const STDIO_IDLE_EXIT_MS = 45_000;
/**
 * How long the host waits without hearing from a gateway served over stdio (which pings every
 * {@link STDIO_PING_MS}) before it takes the channel for stalled and fails the calls in flight.
 */
export const STDIO_SILENCE_MS = 30_000;

/** Options of {@link sandboxGatewayLauncher}: what one backend supplies to run the gateway. */
export interface SandboxGatewayOptions {
  /** Starts one process in the sandbox from its argv, with stdin, stdout and stderr piped. */
  start(argv: readonly string[]): Promise<SandboxProcess>;
  /** The sandbox's node (see `probeNode`). */
  readonly node: string;
  /** The gateway bundle, as a path inside the sandbox. */
  readonly bundle: string;
  /** The default working directory of commands and MCP servers, inside the sandbox. */
  readonly workdir: string;
  /** When set, the gateway's file operations must resolve under one of these roots. */
  readonly allowedRoots?: readonly string[];
  /** Where the gateway listens and how the host reaches it. */
  readonly socket: GatewaySocketPlace;
  /** How long a gateway whose stdin was closed may take to exit before it is killed. Default 2 000 ms. */
  readonly stopGraceMs?: number;
  /**
   * Over stdio: how often each side pings, and how long the host hears nothing before it fails the
   * channel. Default {@link STDIO_PING_MS} and {@link STDIO_SILENCE_MS}.
   */
  readonly keepAlive?: {
    /** How often each side pings, in milliseconds. */
    readonly pingMs: number;
    /** How long the host hears nothing before it fails the channel, in milliseconds. */
    readonly silenceMs: number;
  };
}

const LOG_TAIL_BYTES = 4_096;
const DEFAULT_STOP_GRACE_MS = 2_000;

/**
 * The one way every sandboxed backend runs the gateway. Each launch starts
 * `node <bundle> --socket <inside>/gateway-<nonce>.sock --secrets-stdin …` with the backend's
 * `start`, writes the token and nonce to its stdin (so they are in no file, argument or environment
 * of the sandbox) and keeps stdin open: the gateway exits when it closes, with the host process at
 * the latest. Its output is kept as the log tail; stopping closes stdin, and kills it after the grace
 * time. Health checks, relaunches and error reports are {@link GatewayLink}'s.
 */
export function sandboxGatewayLauncher(options: SandboxGatewayOptions): GatewayLauncher {
  const log = new TailBuffer(LOG_TAIL_BYTES);
  const { socket } = options;
  const keepAlive = options.keepAlive ?? { pingMs: STDIO_PING_MS, silenceMs: STDIO_SILENCE_MS };
  return {
    async launch({ token, nonce }, { signal }): Promise<LaunchedGateway> {
      const name = `gateway-${nonce.slice(0, 12)}.sock`;
      const process = await options.start([
        options.node,
        options.bundle,
        ...(socket.kind === 'stdio'
          ? ['--stdio', '--idle-exit-ms', String(STDIO_IDLE_EXIT_MS), '--ping-ms', String(keepAlive.pingMs)]
          : socket.kind === 'proxied'
            ? ['--port', '0', '--host', '127.0.0.1', '--idle-exit-ms', String(STDIO_IDLE_EXIT_MS)]
            : ['--socket', `${socket.inside}/${name}`]),
        '--secrets-stdin',
        '--workdir',
        options.workdir,
        ...(options.allowedRoots ?? []).flatMap((root) => ['--allow', root]),
      ]);
      const mux =
        socket.kind === 'stdio'
          ? new MuxEndpoint({
              send: (text) => process.write(text),
              onNoise: (line) => log.push(new TextEncoder().encode(`${line}\n`)),
              pingMs: keepAlive.pingMs,
              silenceMs: keepAlive.silenceMs,
            })
          : undefined;
      const copy = async (stream: AsyncIterable<Uint8Array>) => {
        for await (const chunk of stream) log.push(chunk);
      };
      const demultiplex = async (stream: AsyncIterable<Uint8Array>, into: MuxEndpoint) => {
        const decoder = new TextDecoder();
        for await (const chunk of stream) into.receive(decoder.decode(chunk, { stream: true }));
      };
      // A gateway on a port says which one on stderr once it listens.
      const listening = socket.kind === 'proxied' ? new PortWatch() : undefined;
      const copied = Promise.all([
        mux ? demultiplex(process.stdout, mux) : copy(process.stdout),
        listening
          ? (async () => {
              for await (const chunk of process.stderr) {
                log.push(chunk);
                listening.push(chunk);
              }
            })()
          : copy(process.stderr),
      ]).catch(() => {});
      let upgraded: MuxEndpoint | undefined;
      let exited = false;
      void process.exited.then((exit) => {
        exited = true;
        const gone = new Error(`the gateway process exited (${JSON.stringify(exit)})`);
        mux?.close(gone);
        upgraded?.close(gone);
        listening?.fail(gone);
      });
      const stop = async () => {
        mux?.close(new Error('the gateway was stopped'));
        upgraded?.close(new Error('the gateway was stopped'));
        await process.closeStdin().catch(() => {});
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          process.exited,
          new Promise((resolve) => {
            timer = setTimeout(resolve, options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
          }),
        ]);
        clearTimeout(timer);
        if (!exited) await Promise.resolve(process[Symbol.asyncDispose]()).catch(() => {});
        await copied;
        if (socket.kind === 'pinned') {
          await rm(join(socket.pinned, name), { force: true });
          await rm(join(socket.shared, name), { force: true });
        }
      };
      try {
        await process.write(`${JSON.stringify({ token, nonce })}\n`);
      } catch (error) {
        await stop();
        throw error;
      }
      if (socket.kind === 'proxied') {
        // Bounded as a start's health check is: a vendor that stops answering fails the launch.
        const limit = AbortSignal.timeout(GATEWAY_START_TIMEOUT_MS);
        const within = signal ? AbortSignal.any([signal, limit]) : limit;
        try {
          const port = await (listening as PortWatch).port(within);
          const endpoint = await socket.endpoint(port);
          upgraded = await upgradeToMux(endpoint, token, within, (line) =>
            log.push(new TextEncoder().encode(`${line}\n`)),
          );
        } catch (error) {
          await stop();
          if (limit.aborted && !signal?.aborted)
            throw new WsError(
              'BACKEND_UNAVAILABLE',
              `The gateway's port was not reached within ${GATEWAY_START_TIMEOUT_MS} ms`,
              { cause: error },
            );
          throw error;
        }
        return { channel: { kind: 'mux', mux: upgraded }, exited: process.exited, stop };
      }
      const reach: { channel: GatewayChannel; ready?: () => Promise<boolean> } =
        socket.kind === 'stdio'
          ? { channel: { kind: 'mux', mux: mux as MuxEndpoint } }
          : socket.kind === 'pinned'
            ? pinnedSocketChannel(socket.shared, name, socket.pinned)
            : {
                channel: {
                  kind: 'relay',
                  sandbox: socket.sandbox,
                  target: `${socket.inside}/${name}`,
                  node: options.node,
                },
              };
      return { ...reach, exited: process.exited, stop };
    },
    logTail: async () => log.text(),
  };
}

/**
 * A launcher whose first launch runs `prepare` (installs the bundle, finds the node: what a backend
 * does not want to pay for at the opening) and launches through the launcher it returns, which is
 * kept for the launches after. A preparation that fails is run again by the next launch; one that
 * finds the gateway cannot run there returns a launcher that says so (see {@link refusingLauncher}).
 */
export function preparedLauncher(
  prepare: (options: { signal?: AbortSignal }) => Promise<GatewayLauncher>,
): GatewayLauncher {
  let preparing: Promise<GatewayLauncher> | undefined;
  let prepared: GatewayLauncher | undefined;
  return {
    async launch(secrets, options) {
      if (!preparing) {
        const attempt = prepare(options.signal ? { signal: options.signal } : {});
        preparing = attempt;
        attempt.catch(() => {
          if (preparing === attempt) preparing = undefined;
        });
      }
      prepared = await preparing;
      return prepared.launch(secrets, options);
    },
    logTail: async () => (prepared ? prepared.logTail() : ''),
  };
}

/** A launcher that never launches: `error` is why no gateway can run in this sandbox. */
export function refusingLauncher(error: Error): GatewayLauncher {
  return {
    launch: async () => {
      throw error;
    },
    logTail: async () => '',
  };
}
