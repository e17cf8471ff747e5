import { randomBytes } from 'node:crypto';
import { throwIfAborted, WsError } from '../contracts/errors.js';
import type { BackendEvent } from '../contracts/events.js';
import { type GatewayChannel, GatewayClient } from './client.js';
import { GATEWAY_PROTOCOL_VERSION } from './protocol.js';

/** How long a gateway whose request failed has to answer its health check before it counts as down. */
const DIAGNOSE_HEALTH_MS = 5_000;

/** A running gateway process, as its backend started it. */
export interface LaunchedGateway {
  /** How the host reaches it. */
  readonly channel: GatewayChannel;
  /**
   * Called before each health check until it resolves true: makes the channel reachable once the
   * gateway has created it (for a socket in a folder the sandbox can write, pins it with `pinSandboxSocket`).
   * Absent: the channel is usable at once.
   */
  readonly ready?: () => Promise<boolean>;
  /** Settles when the process exits. */
  readonly exited: Promise<unknown>;
  /** Stops the process (idempotent). */
  stop(): Promise<void>;
}

/**
 * What a backend supplies to run the gateway: start it with this launch's token and nonce (written
 * to its stdin as one JSON line, with `--secrets-stdin`, so they appear in no file, argument or
 * environment of the sandbox), and read the tail of its log.
 */
export interface GatewayLauncher {
  /** Starts one gateway process with these secrets; resolves once it runs (not yet answering). */
  launch(
    secrets: { token: string; nonce: string },
    options: { signal?: AbortSignal },
  ): Promise<LaunchedGateway>;
  /** The last bytes of the gateway's log, for error messages. */
  logTail(): Promise<string>;
}

/** How long a launch may take to answer its health check. */
export const GATEWAY_START_TIMEOUT_MS = 15_000;

/**
 * One gateway over its lifetime: launched with a fresh token and nonce each time, health-checked
 * (the nonce must match, so an old process on the same socket is never taken for the new one),
 * noticed when it dies, and relaunched on the next use.
 */
export class GatewayLink {
  private current: { client: GatewayClient; process: LaunchedGateway; generation: number } | undefined;
  private dead: string | undefined;
  private starting: Promise<GatewayClient> | undefined;
  private generation = 0;
  private stopped = false;
  /** A launch aborted by stop(), whose process is being stopped. */
  private abandoned: Promise<void> | undefined;
  /** Aborts a launch in flight when the link stops. */
  private readonly stopping = new AbortController();
  /** Milliseconds the last successful launch took, from its start to its first healthy answer. */
  startedMs: number | undefined;

  /**
   * Does no I/O: the gateway starts on the first `start()`. `events` hears of each start (and
   * restart), each failed launch and a gateway found down, with the log's tail.
   */
  constructor(
    private readonly launcher: GatewayLauncher,
    private readonly events?: ((event: BackendEvent) => void) | undefined,
  ) {}

  /** True while a launch is in flight. */
  get isStarting(): boolean {
    return this.starting !== undefined;
  }

  /**
   * Starts the gateway without waiting for it, so that it is not in the way of the first calls
   * (which go the backend's direct way meanwhile). A failure is reported by the next `start()`.
   */
  startInBackground(): void {
    if (this.stopped || this.starting || this.client) return;
    void this.start().catch(() => {});
  }

  /** Which launch is current; MCP sessions of an older launch are gone. */
  get currentGeneration(): number {
    return this.current?.generation ?? -1;
  }

  /** The client of the running gateway, or undefined when it is not (known to be) up. */
  get client(): GatewayClient | undefined {
    return this.dead === undefined ? this.current?.client : undefined;
  }

  /** Starts the gateway (idempotent while it runs). @throws WsError `BACKEND_UNAVAILABLE` with the log tail. */
  async start(options: { signal?: AbortSignal } = {}): Promise<GatewayClient> {
    if (this.stopped) throw new WsError('DISPOSED', 'The gateway link is stopped');
    const running = this.client;
    if (running) return running;
    this.starting ??= this.launch(options).finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async launch(callerOptions: { signal?: AbortSignal }): Promise<GatewayClient> {
    const began = performance.now();
    const signal = callerOptions.signal
      ? AbortSignal.any([callerOptions.signal, this.stopping.signal])
      : this.stopping.signal;
    const options = { signal };
    if (this.current) await this.current.process.stop().catch(() => {});
    this.current = undefined;
    const token = randomBytes(32).toString('base64url');
    const nonce = randomBytes(16).toString('hex');
    const process = await this.launcher.launch({ token, nonce }, options);
    const client = new GatewayClient(process.channel, token);
    let exited = false;
    void process.exited.then(() => {
      exited = true;
      if (this.current?.process !== process || this.stopped) return;
      const reason = 'the gateway process exited';
      const wasUp = this.dead === undefined;
      this.dead = reason;
      const events = this.events;
      if (events && wasUp)
        void this.launcher
          .logTail()
          .catch(() => '')
          .then((logTail) => events({ type: 'gateway.down', reason, logTail }));
    });
    const deadline = Date.now() + GATEWAY_START_TIMEOUT_MS;
    try {
      let ready = false;
      // A failed connection attempt to a socket costs microseconds: poll often, so start-up is not rounded up.
      for (let attempt = 0; ; attempt++) {
        throwIfAborted(options.signal);
        if (!ready) ready = (await process.ready?.()) ?? true;
        const health = ready ? await client.health(1_000) : undefined;
        if (health?.nonce === nonce) {
          if (health.protocol !== GATEWAY_PROTOCOL_VERSION) {
            throw new WsError(
              'BACKEND_ERROR',
              `The gateway speaks protocol ${health.protocol}, this host ${GATEWAY_PROTOCOL_VERSION}`,
            );
          }
          break;
        }
        if (exited || Date.now() > deadline) {
          const tail = await this.launcher.logTail().catch(() => '');
          throw new WsError(
            'BACKEND_UNAVAILABLE',
            `The gateway did not start${exited ? ' (it exited)' : ` within ${GATEWAY_START_TIMEOUT_MS} ms`}.${tail ? ` Log tail:\n${tail}` : ''}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, attempt < 200 ? 10 : 50));
      }
    } catch (error) {
      // A launch that fails (or is aborted) leaves nothing running. Aborted by stop(), the process is
      // stopped there, as stop() was asked to (waiting for it or not).
      if (this.events && !this.stopping.signal.aborted && !callerOptions.signal?.aborted)
        this.events({
          type: 'gateway.failed',
          error: (error as Error).message ?? String(error),
        });
      client.close();
      const stopped = process.stop().catch(() => {});
      if (this.stopping.signal.aborted) this.abandoned = stopped;
      else await stopped;
      throw error;
    }
    this.generation++;
    this.current = { client, process, generation: this.generation };
    this.dead = undefined;
    this.startedMs = performance.now() - began;
    this.events?.({
      type: 'gateway.started',
      durationMs: this.startedMs,
      restart: this.generation > 1,
      generation: this.generation,
    });
    return client;
  }

  /**
   * Called after a request's connection to the gateway failed: if the gateway no longer answers its
   * health check, it is marked dead (the next `start()` relaunches it) and the error carries its log
   * tail. `details.mayHaveRun` says whether the request may have taken effect (then it must not be
   * sent again).
   */
  async diagnose(cause: unknown, mayHaveRun: boolean): Promise<WsError> {
    const current = this.current;
    // A live gateway behind a backed-up channel (a large body still draining, a busy machine) can
    // take a few seconds to answer; declaring it dead restarts it and fails what it holds.
    const alive = current ? (await current.client.health(DIAGNOSE_HEALTH_MS))?.nonce !== undefined : false;
    const outcome = mayHaveRun
      ? ' The request had reached it and may have taken effect; it was not sent again.'
      : ' Nothing of the request reached it.';
    if (alive)
      return new WsError(
        'BACKEND_UNAVAILABLE',
        `The connection to the gateway failed: ${(cause as Error)?.message ?? String(cause)}.${outcome}`,
        { cause, details: { mayHaveRun } },
      );
    this.dead = 'the gateway stopped answering';
    current?.client.close();
    const tail = await this.launcher.logTail().catch(() => '');
    this.events?.({ type: 'gateway.down', reason: this.dead, logTail: tail });
    return new WsError(
      'BACKEND_UNAVAILABLE',
      `The gateway is down; it restarts on the next call.${outcome}${tail ? ` Log tail:\n${tail}` : ''}`,
      { cause, details: { mayHaveRun } },
    );
  }

  /** Stops the gateway for good. */
  /**
   * Stops the gateway for good (idempotent). With `wait: false` it does not wait for the process to
   * exit: for a sandbox about to be removed with everything in it.
   */
  async stop(options: { wait?: boolean } = {}): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    await this.starting?.catch(() => {});
    const current = this.current;
    this.current = undefined;
    current?.client.close();
    const stopped = Promise.all([this.abandoned, current?.process.stop()]);
    if (options.wait ?? true) await stopped;
    else void stopped.catch(() => {});
  }
}
