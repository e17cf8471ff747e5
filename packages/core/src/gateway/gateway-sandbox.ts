import type { IncomingMessage } from 'node:http';
import { createExecResult, normalizeInput, OutputCollector } from '../backend/exec-result.js';
import { assertArgv } from '../backend/host-process.js';
import { resolveSandboxPath } from '../backend/paths.js';
import { completeSandbox } from '../backend/posix-fallbacks.js';
import { collectBytes } from '../backend/streams.js';
import { abortError, isWsError, throwIfAborted, WsError } from '../contracts/errors.js';
import {
  type CompleteSandbox,
  DEFAULT_MAX_OUTPUT_BYTES,
  type DirEntry,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type FileStat,
  type MkdirOptions,
  type ReadStreamOptions,
  type RemoveOptions,
  type Sandbox,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
} from '../contracts/sandbox.js';
import {
  errorFromResponse,
  type GatewayClient,
  isConnectionFailure,
  parseGatewayJson,
  readText,
} from './client.js';
import { GATEWAY_START_TIMEOUT_MS, type GatewayLink } from './link.js';
import type { GatewayExecFrame, GatewayExecRequest, GatewayFileOp } from './protocol.js';

/** Options of {@link GatewaySandbox}. */
export interface GatewaySandboxOptions {
  /** The backend's own sandbox, used whenever the gateway is not up. */
  direct: Sandbox;
  /** The gateway's launch, started on first use and relaunched when it stops answering. */
  link: GatewayLink;
  /** Run commands through the gateway too (worth it where the backend's own exec is slow). */
  routeExec: boolean;
  /** Refuses paths this backend must not touch (throws a WsError); runs before every file operation. */
  checkPath?: (absolutePath: string) => void;
  /**
   * Which calls wait for a gateway that is starting instead of going the direct way meanwhile:
   * - `true`, all: worth it where the gateway starts in about the time of a few direct calls (a local
   *   process sandbox, whose direct calls each spawn a sandbox);
   * - `'commands'`: commands, and listings where the direct sandbox lists through a command: for a
   *   backend whose own command output is text (bytes that are not UTF-8 lost), so that only its
   *   native file calls go direct meanwhile.
   * A failed start still falls back to the direct way.
   */
  awaitStart?: boolean | 'commands';
  /**
   * Start the gateway only in the background, once no call has begun for `afterIdleMs` or after
   * `afterCalls` calls, whichever comes first; until then calls go the direct way. For a backend
   * whose direct calls cost about what the gateway's do, so that a workspace's first calls do not
   * wait for it. A failed start is passed to `failed` and tried again on a later call.
   */
  deferStart?: {
    /** How long no call may have begun before the gateway starts, in milliseconds. */
    readonly afterIdleMs: number;
    /** How many calls go the direct way before the gateway starts. */
    readonly afterCalls: number;
    /** Called with the error of a failed start. */
    readonly failed?: (error: unknown) => void;
  };
}

// The longest line of a command's output stream: a frame holds one base64 chunk, far below this.
const MAX_FRAME_CHARS = 16 * 1024 * 1024;
// How long after a command's own timeout its answer may take (the gateway's kill grace, a slow
// transport) before the call fails as stalled.
const EXEC_ANSWER_GRACE_MS = 10_000;
/**
 * When a deferred gateway starts (see `GatewaySandboxOptions.deferStart`): once the sandbox has had
 * no call for this long (an agent's model turn), or after this many calls, whichever comes first; an
 * MCP server's start waits for neither. Until then calls go the backend's direct way, so opening a
 * workspace and running its first commands pay for no node in the sandbox.
 */
export const DEFERRED_GATEWAY_START = {
  /** How long the sandbox has had no call before the gateway starts, in milliseconds. */
  afterIdleMs: 250,
  /** How many calls go the direct way before the gateway starts. */
  afterCalls: 16,
} as const;

// After a launch fails, file and command calls use the direct path for this long before trying again.
const RELAUNCH_BACKOFF_MS = 30_000;

/**
 * A sandbox whose file operations (and, if asked, commands) go through the in-sandbox gateway while it
 * is up, and through the backend's own sandbox otherwise. A gateway that stopped answering is
 * relaunched on a later call.
 */
export class GatewaySandbox implements Sandbox {
  readonly capabilities: SandboxCapabilities;
  private readonly fallback: CompleteSandbox;
  private lastFailedStart = 0;
  /** With `deferStart`: whether the gateway's start was asked for, the calls made before, the idle timer. */
  private deferred = { asked: false, calls: 0, timer: undefined as NodeJS.Timeout | undefined };
  /** Recursive mkdirs waiting to go the direct way together (see `mkdirTogether`). */
  private mkdirs:
    | {
        target: string;
        signal: AbortSignal | undefined;
        resolve: () => void;
        reject: (error: unknown) => void;
      }[]
    | undefined;

  /** Does no I/O: the gateway starts on the first call that needs it. */
  constructor(private readonly options: GatewaySandboxOptions) {
    this.fallback = completeSandbox(options.direct);
    this.capabilities = {
      stat: true,
      list: true,
      remove: true,
      mkdir: true,
      rename: true,
      readStream: true,
      writeStream: true,
      spawn: this.fallback.capabilities.spawn,
    };
  }

  get backend(): string {
    return this.options.direct.backend;
  }

  get workdir(): string {
    return this.options.direct.workdir;
  }

  /** `command`: a call whose direct way would carry its output through a command. */
  private async gateway(
    kind: 'command' | 'file',
    signal: AbortSignal | undefined,
  ): Promise<GatewayClient | undefined> {
    const { link } = this.options;
    if (link.client) return link.client;
    if (this.options.deferStart && !this.deferred.asked) {
      this.deferCall(this.options.deferStart);
      return undefined;
    }
    // A gateway still starting is not waited for: the call goes the direct way meanwhile.
    const { awaitStart } = this.options;
    if (link.isStarting && !(awaitStart === true || (awaitStart === 'commands' && kind === 'command')))
      return undefined;
    if (Date.now() - this.lastFailedStart < RELAUNCH_BACKOFF_MS) return undefined;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      // Waited for at most as long as a start may take to answer, and never past the call's signal:
      // a start held up by a vendor that stopped answering sends the call the direct way.
      return await Promise.race([
        link.start(),
        new Promise<undefined>((resolve, reject) => {
          timer = setTimeout(() => resolve(undefined), GATEWAY_START_TIMEOUT_MS);
          onAbort = () => reject(abortError(signal));
          signal?.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      if (isWsError(error) && error.code === 'ABORTED') throw error;
      this.lastFailedStart = Date.now();
      return undefined;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Counts a call made before the deferred start, and starts the gateway when the time has come. */
  private deferCall(defer: NonNullable<GatewaySandboxOptions['deferStart']>): void {
    const deferred = this.deferred;
    clearTimeout(deferred.timer);
    if (++deferred.calls >= defer.afterCalls) {
      this.startDeferred(defer);
      return;
    }
    deferred.timer = setTimeout(() => this.startDeferred(defer), defer.afterIdleMs);
    deferred.timer.unref();
  }

  private startDeferred(defer: NonNullable<GatewaySandboxOptions['deferStart']>): void {
    if (this.deferred.asked) return;
    this.deferred.asked = true;
    clearTimeout(this.deferred.timer);
    const { link } = this.options;
    if (link.client || link.isStarting) return;
    void link.start().catch((error: unknown) => {
      this.lastFailedStart = Date.now();
      defer.failed?.(error);
    });
  }

  /**
   * Sends a request through the gateway. Undefined means "go direct": the gateway is down, or the
   * request never reached it, or it is a read (`idempotent`), which may safely be made again. A
   * request that reached the gateway and may have taken effect is never sent again: its connection
   * failure is thrown as `BACKEND_UNAVAILABLE` with `details.mayHaveRun`.
   */
  private async send(
    method: string,
    path: string,
    options: Parameters<GatewayClient['request']>[2],
    idempotent: boolean,
    kind: 'command' | 'file' = 'file',
  ): Promise<IncomingMessage | undefined> {
    const client = await this.gateway(kind, options?.signal);
    if (!client) return undefined;
    try {
      return await client.request(method, path, options);
    } catch (error) {
      if (!isConnectionFailure(error)) throw error;
      const diagnosed = await this.options.link.diagnose(error, error.reached && !idempotent);
      if (!error.reached || idempotent) return undefined;
      throw diagnosed;
    }
  }

  /** The gateway's answer as a stream whose failures are WsErrors (a broken connection included). */
  private async *body(
    response: IncomingMessage,
    what: string,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<Uint8Array> {
    try {
      yield* response as AsyncIterable<Uint8Array>;
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      if (isWsError(error)) throw error;
      throw await this.options.link.diagnose(
        new Error(`${what}: ${(error as Error)?.message ?? String(error)}`, { cause: error }),
        true,
      );
    } finally {
      response.destroy();
    }
  }

  private path(path: string): string {
    const absolute = resolveSandboxPath(this.workdir, path);
    this.options.checkPath?.(absolute);
    return absolute;
  }

  private async fileOp<T>(
    op: GatewayFileOp,
    signal: AbortSignal | undefined,
    direct: () => Promise<T>,
  ): Promise<T> {
    throwIfAborted(signal);
    const idempotent = op.op === 'stat' || op.op === 'list';
    const response = await this.send(
      'POST',
      '/files/op',
      { body: JSON.stringify(op), headers: { 'content-type': 'application/json' }, signal },
      idempotent,
      // A listing's names are a command's output where the direct sandbox has no listing of its own.
      op.op === 'list' && !this.fallback.native.list ? 'command' : 'file',
    );
    if (!response) return direct();
    const text = await readText(response);
    if ((response.statusCode ?? 500) >= 400) throw errorFromResponse(response.statusCode ?? 500, text);
    return parseGatewayJson<T>(text);
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (!this.options.routeExec) return this.options.direct.exec(argv, options);
    assertArgv(argv);
    throwIfAborted(options.signal);
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const header: GatewayExecRequest = {
      argv,
      ...(options.cwd !== undefined ? { cwd: resolveSandboxPath(this.workdir, options.cwd) } : {}),
      ...(options.env ? { env: { ...options.env } } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.stdin !== undefined ? { stdin: 'stream' as const } : {}),
      // Nobody listens to the output: only its head is kept, so only the head need cross the channel.
      ...(!options.onStdout && !options.onStderr && Number.isFinite(limit) ? { maxOutputBytes: limit } : {}),
    };
    const stdin = options.stdin === undefined ? undefined : normalizeInput(options.stdin);
    const body: AsyncIterable<Uint8Array> = {
      async *[Symbol.asyncIterator]() {
        yield new TextEncoder().encode(`${JSON.stringify(header)}\n`);
        if (stdin instanceof Uint8Array) yield stdin;
        else if (stdin) yield* stdin;
      },
    };
    // The gateway stops the command at its timeout and answers at once; no answer well after that
    // means the channel stalled, and the call fails (maybe run) instead of waiting for ever.
    const deadline = options.timeoutMs !== undefined ? new AbortController() : undefined;
    const timer =
      deadline && setTimeout(() => deadline.abort(), (options.timeoutMs as number) + EXEC_ANSWER_GRACE_MS);
    const signal =
      deadline && options.signal
        ? AbortSignal.any([options.signal, deadline.signal])
        : (deadline?.signal ?? options.signal);
    const stalled = async () =>
      this.options.link.diagnose(
        new Error(
          `no answer came within ${(options.timeoutMs as number) + EXEC_ANSWER_GRACE_MS} ms of a command given ${options.timeoutMs} ms: the channel to the gateway stalled`,
        ),
        true,
      );
    try {
      return await this.execThroughGateway(argv, options, body, limit, signal);
    } catch (error) {
      if (deadline?.signal.aborted && !options.signal?.aborted) throw await stalled();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** `exec` once routed to the gateway; `signal` also fires at the call's answer deadline. */
  private async execThroughGateway(
    argv: readonly string[],
    options: ExecOptions,
    body: AsyncIterable<Uint8Array>,
    limit: number,
    signal: AbortSignal | undefined,
  ): Promise<ExecResult> {
    const response = await this.send('POST', '/exec', { body, signal }, false, 'command');
    if (!response) return this.options.direct.exec(argv, options);
    if ((response.statusCode ?? 500) >= 400)
      throw errorFromResponse(response.statusCode ?? 500, await readText(response));
    const stdout = new OutputCollector(limit);
    const stderr = new OutputCollector(limit);
    let exit: Extract<GatewayExecFrame, { t: 'x' }> | undefined;
    let partial = '';
    try {
      for await (const chunk of response) {
        const lines = (partial + (chunk as Buffer).toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        if (partial.length > MAX_FRAME_CHARS)
          throw new WsError(
            'BACKEND_ERROR',
            'The gateway sent a malformed command stream (an oversized frame)',
          );
        for (const line of lines) {
          if (line === '') continue;
          const frame = parseGatewayJson<GatewayExecFrame>(line);
          if (frame.t === 'f') throw new WsError(frame.error.code, frame.error.message);
          if (frame.t === 'x') {
            exit = frame;
            continue;
          }
          const bytes = Buffer.from(frame.d, 'base64');
          (frame.t === 'o' ? stdout : stderr).push(bytes);
          const listener = frame.t === 'o' ? options.onStdout : options.onStderr;
          // Awaiting the listener here stops reading the response: back-pressure reaches the process.
          if (listener) await listener(bytes);
        }
      }
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      if (error instanceof WsError) throw error;
      throw await this.options.link.diagnose(error, true);
    } finally {
      response.destroy();
    }
    if (signal?.aborted) throw abortError(signal);
    if (!exit)
      throw await this.options.link.diagnose(new Error('the command stream ended without an exit'), true);
    return createExecResult({
      exitCode: exit.exitCode,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
      timedOut: exit.timedOut,
      truncated: stdout.truncated || stderr.truncated || exit.truncated === true,
      signal: exit.signal,
    });
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    throwIfAborted(options.signal);
    const target = this.path(path);
    const response = await this.send(
      'GET',
      `/files?path=${encodeURIComponent(target)}`,
      { signal: options.signal },
      true,
    );
    // The backend's own read when the gateway is not there (with its own checks, where it has them).
    if (!response) return this.options.direct.readFile(target, options);
    if ((response.statusCode ?? 500) >= 400)
      throw errorFromResponse(response.statusCode ?? 500, await readText(response));
    return collectBytes(this.body(response, `reading ${target}`, options.signal));
  }

  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const target = this.path(path);
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    const response = await this.send(
      'PUT',
      this.filesQuery(target, options),
      { body: bytes, signal: options.signal },
      false,
    );
    // The backend's own write when the gateway is not there (with its own checks, where it has them).
    if (!response) return this.options.direct.writeFile(target, bytes, options);
    const text = await readText(response);
    if ((response.statusCode ?? 500) >= 400) throw errorFromResponse(response.statusCode ?? 500, text);
  }

  private filesQuery(target: string, options: WriteOptions): string {
    return `/files?path=${encodeURIComponent(target)}${options.mode !== undefined ? `&mode=${options.mode.toString(8)}` : ''}`;
  }

  async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    throwIfAborted(options.signal);
    const target = this.path(path);
    const response = await this.send(
      'GET',
      `/files?path=${encodeURIComponent(target)}`,
      { signal: options.signal },
      true,
      this.fallback.native.readStream ? 'file' : 'command',
    );
    if (!response) return this.fallback.readStream(target, options);
    if ((response.statusCode ?? 500) >= 400)
      throw errorFromResponse(response.statusCode ?? 500, await readText(response));
    return this.body(response, `reading ${target}`, options.signal);
  }

  async writeStream(
    path: string,
    source: AsyncIterable<Uint8Array>,
    options: WriteOptions = {},
  ): Promise<void> {
    throwIfAborted(options.signal);
    const target = this.path(path);
    const response = await this.send(
      'PUT',
      this.filesQuery(target, options),
      { body: source, signal: options.signal },
      false,
    );
    if (!response) return this.fallback.writeStream(target, source, options);
    const text = await readText(response);
    if ((response.statusCode ?? 500) >= 400) throw errorFromResponse(response.statusCode ?? 500, text);
  }

  stat(path: string, options: FileOptions = {}): Promise<FileStat> {
    const target = this.path(path);
    return this.fileOp({ op: 'stat', path: target }, options.signal, () =>
      this.fallback.stat(target, options),
    );
  }

  list(path: string, options: FileOptions = {}): Promise<DirEntry[]> {
    const target = this.path(path);
    return this.fileOp({ op: 'list', path: target }, options.signal, () =>
      this.fallback.list(target, options),
    );
  }

  async remove(path: string, options: RemoveOptions = {}): Promise<void> {
    const target = this.path(path);
    if (target === '/') throw new WsError('INVALID_ARGUMENT', 'Refusing to remove /');
    await this.fileOp(
      { op: 'remove', path: target, recursive: options.recursive ?? false, force: options.force ?? false },
      options.signal,
      () => this.fallback.remove(target, options),
    );
  }

  async mkdir(path: string, options: MkdirOptions = {}): Promise<void> {
    const target = this.path(path);
    await this.fileOp(
      { op: 'mkdir', path: target, recursive: options.recursive ?? false },
      options.signal,
      () =>
        options.recursive && !this.fallback.native.mkdir
          ? this.mkdirTogether(target, options.signal)
          : this.fallback.mkdir(target, options),
    );
  }

  /**
   * A recursive mkdir the direct way where that is a command: the ones asked for together (a
   * workspace's layout) go as one `mkdir -p`, and each goes alone again when that fails, for its
   * own error.
   */
  private mkdirTogether(target: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiting = { target, signal, resolve, reject };
      if (this.mkdirs) {
        this.mkdirs.push(waiting);
        return;
      }
      const batch = [waiting];
      this.mkdirs = batch;
      setImmediate(() => {
        this.mkdirs = undefined;
        void this.makeBatch(batch);
      });
    });
  }

  private async makeBatch(batch: NonNullable<GatewaySandbox['mkdirs']>): Promise<void> {
    const alone = async (item: (typeof batch)[number]) =>
      this.fallback
        .mkdir(item.target, { recursive: true, ...(item.signal ? { signal: item.signal } : {}) })
        .then(item.resolve, item.reject);
    if (batch.length === 1) return alone(batch[0] as (typeof batch)[number]);
    const signals = batch.flatMap((item) => (item.signal ? [item.signal] : []));
    const made = await this.options.direct
      .exec(
        [
          'sh',
          '-c',
          'for d; do if [ -e "$d" ]; then [ -d "$d" ] || exit 69; else mkdir -p -- "$d" || exit 1; fi; done',
          'sh',
          ...batch.map((item) => item.target),
        ],
        { cwd: '/', ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}) },
      )
      .then(
        (result) => result.exitCode === 0,
        () => false,
      );
    if (made) for (const item of batch) item.resolve();
    else await Promise.all(batch.map(alone));
  }

  async rename(from: string, to: string, options: FileOptions = {}): Promise<void> {
    const source = this.path(from);
    const destination = this.path(to);
    await this.fileOp({ op: 'rename', path: source, to: destination }, options.signal, () =>
      this.fallback.rename(source, destination, options),
    );
  }

  spawn(argv: readonly string[], options?: SpawnOptions): Promise<SandboxProcess> {
    return this.fallback.spawn(argv, options);
  }
}
