import type { Sandbox, ServerStreamEvent } from '@alibaba-group/opensandbox';
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  type ExecOptions,
  type ExecResult,
  type FileOptions,
  type ProcessExit,
  type ReadStreamOptions,
  type SandboxCapabilities,
  type SandboxProcess,
  type SpawnOptions,
  type WriteOptions,
  WsError,
  type Sandbox as WsSandbox,
} from '@ws/core';
import {
  abortError,
  assertArgv,
  ChunkQueue,
  collectBytes,
  createExecResult,
  cwdError,
  encodeUtf8,
  enterCwd,
  normalizeInput,
  OutputCollector,
  resolveSandboxPath,
  shellJoin,
  shellQuote,
  throwIfAborted,
  writeThroughTemporary,
} from '@ws/core/backend';
import { Downloads } from './downloads.js';
import { isTooLarge, translateOpenSandboxError } from './errors.js';
import { pipedProcess, randomName } from './piped-process.js';

const READY_MARK = 'ws-opensandbox: input ready';
/** Where input files and the pipes of spawned processes live while they are used. */
const SPOOL = '/tmp/.ws-opensandbox';
/** The smallest part an upload is split into after a request was refused as too large. */
const MIN_PART_BYTES = 64 * 1024;

/** The exit code of an event stream's end: `error` carries it as its value; `execution_complete` is 0. */
function exitOf(event: ServerStreamEvent): { exitCode: number } | { failure: string } {
  if (event.type === 'execution_complete') return { exitCode: 0 };
  const error = (event.error ?? {}) as { evalue?: unknown; traceback?: unknown };
  const value = String(error.evalue ?? '').trim();
  if (/^-?\d+$/.test(value)) return { exitCode: Number(value) };
  return { failure: value || JSON.stringify(event.error) };
}

/**
 * An OpenSandbox sandbox as a sandbox, through the official SDK alone: commands through execd's
 * command stream (stdout and stderr apart, as text), files through execd's file API, writes through a
 * temporary file renamed over the target.
 *
 * execd gives a command no standard input. Input of `exec` is uploaded into a private file first
 * and read from there; a spawned process reads a named pipe that each `write` fills with one command.
 * Command output reaches the host as text (decoded as UTF-8 by execd), so output that is not UTF-8
 * reaches this path with U+FFFD in place of invalid bytes; the workspace runs commands through the
 * gateway, which carries bytes, whenever the sandbox has node.
 */
export class OpenSandboxSandbox implements WsSandbox {
  readonly backend = 'opensandbox';
  readonly capabilities: SandboxCapabilities = {
    stat: false,
    list: false,
    remove: false,
    mkdir: false,
    rename: false,
    readStream: true,
    writeStream: false,
    spawn: true,
  };

  /** Processes started by `spawn` that have not exited. */
  private readonly spawned = new Set<SandboxProcess>();
  /** The part size uploads are split into, once one request was refused as too large (413). */
  private partBytes: number | undefined;

  constructor(
    private readonly sandbox: Sandbox,
    readonly workdir: string,
    private readonly env: Readonly<Record<string, string>>,
    private readonly downloads: Downloads = new Downloads(),
  ) {}

  /** Kills every process `spawn` started that still runs (dropping what nobody read of their output). */
  async killSpawned(): Promise<void> {
    const processes = [...this.spawned];
    this.spawned.clear();
    await Promise.all(processes.map((process) => process[Symbol.asyncDispose]()));
  }

  private cwdOf(cwd: string | undefined): string {
    return cwd === undefined ? this.workdir : resolveSandboxPath(this.workdir, cwd);
  }

  /** The shell text that enters `cwd` or reports why it cannot (execd runs it with `bash -c`). */
  private enter(cwd: string, cleanup = ''): string {
    return enterCwd(shellQuote(cwd), cleanup);
  }

  /** Uploads `input` into a fresh private file and returns its path. */
  private async upload(
    input: Uint8Array | AsyncIterable<Uint8Array>,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const path = `${SPOOL}/in-${randomName()}`;
    try {
      if (input instanceof Uint8Array) await this.put(path, input, 600);
      else await this.sandbox.files.writeFiles([{ path, data: input, mode: 600 }]);
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      throw translateOpenSandboxError(error, 'uploading the input of a command');
    }
    return path;
  }

  async exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    throwIfAborted(options.signal);
    assertArgv(argv);
    const cwd = this.cwdOf(options.cwd);
    const input =
      options.stdin === undefined
        ? undefined
        : await this.upload(normalizeInput(options.stdin), options.signal);
    // The input file is opened, then removed: nothing of it stays behind the command.
    const redirect =
      input === undefined ? 'exec </dev/null' : `exec <${shellQuote(input)} && rm -f -- ${shellQuote(input)}`;
    const line = `${redirect}; ${this.enter(cwd)}; exec ${shellJoin(argv)}`;
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdout = new OutputCollector(limit);
    const stderr = new OutputCollector(limit);
    const controller = new AbortController();
    let timedOut = false;
    let aborted = false;
    let commandId: string | undefined;
    const stop = () => {
      controller.abort();
      // Ending the stream ends the command; the interrupt is for a server that kept it.
      if (commandId) void this.sandbox.commands.interrupt(commandId).catch(() => {});
    };
    const timer =
      options.timeoutMs !== undefined
        ? setTimeout(() => {
            timedOut = true;
            stop();
          }, options.timeoutMs)
        : undefined;
    const onAbort = () => {
      aborted = true;
      stop();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the command was starting fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    let end: { exitCode: number } | { failure: string } | undefined;
    try {
      const events = this.sandbox.commands.runStream(
        line,
        { envs: { ...this.env, ...options.env } },
        controller.signal,
      );
      for await (const event of events) {
        if (event.type === 'init') commandId = event.text;
        else if (event.type === 'stdout' || event.type === 'stderr') {
          const bytes = encodeUtf8(event.text ?? '');
          (event.type === 'stdout' ? stdout : stderr).push(bytes);
          const listener = event.type === 'stdout' ? options.onStdout : options.onStderr;
          // Awaited: a slow listener slows the stream down rather than piling it up.
          if (listener) await listener(bytes);
        } else if (event.type === 'execution_complete' || event.type === 'error') end = exitOf(event);
      }
    } catch (error) {
      if (aborted) throw abortError(options.signal);
      if (!timedOut) throw translateOpenSandboxError(error, `exec ${argv[0]}`);
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (input !== undefined && (timedOut || aborted || end === undefined)) void this.removeQuietly(input);
    }
    if (aborted) throw abortError(options.signal);
    if (timedOut)
      return createExecResult({
        exitCode: -1,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        timedOut: true,
        truncated: stdout.truncated || stderr.truncated,
      });
    if (end === undefined)
      throw new WsError('BACKEND_ERROR', `exec ${argv[0]}: the command stream ended without an outcome`);
    if ('failure' in end) throw new WsError('BACKEND_ERROR', `exec ${argv[0]} failed: ${end.failure}`);
    const badCwd = cwdError(end.exitCode, stderr.bytes(), cwd);
    if (badCwd) throw badCwd;
    return createExecResult({
      exitCode: end.exitCode,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
      truncated: stdout.truncated || stderr.truncated,
    });
  }

  private async removeQuietly(path: string): Promise<void> {
    await this.sandbox.commands
      .run(`rm -rf -- ${shellQuote(path)}`, { timeoutSeconds: 30 })
      .then(() => {})
      .catch(() => {});
  }

  /**
   * A long-lived process. Its standard input is a named pipe in a private folder, held open by a
   * second process until `closeStdin()`; each `write` is one command that decodes its bytes into the
   * pipe (writes go one at a time, in order, batched while one is under way). Its output arrives over
   * execd's command stream, which the host reads only as fast as stdout is consumed.
   */
  async spawn(argv: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    throwIfAborted(options.signal);
    assertArgv(argv);
    const cwd = this.cwdOf(options.cwd);
    const dir = `${SPOOL}/p-${randomName()}`;
    const d = shellQuote(dir);
    const line = `umask 077; mkdir -p -- ${d} && mkfifo -- ${d}/in || exit 1
echo $$ > ${d}/pid
sleep 2147483647 > ${d}/in &
echo $! > ${d}/holder
printf '%s\\n' '${READY_MARK}' >&2
${this.enter(cwd, `kill $! 2>/dev/null; rm -rf -- ${d}; `)}
${shellJoin(argv)} < ${d}/in
c=$?
kill "$(cat ${d}/holder)" 2>/dev/null; rm -rf -- ${d}
exit $c`;
    const stdout = new ChunkQueue();
    const stderr = new ChunkQueue(Number.POSITIVE_INFINITY);
    const controller = new AbortController();
    let started: () => void = () => {};
    const init = new Promise<void>((resolve) => {
      started = resolve;
    });
    let over = false;
    let header: string | undefined = '';
    const exited: Promise<ProcessExit> = (async () => {
      let exit: ProcessExit = { exitCode: -1 };
      try {
        const events = this.sandbox.commands.runStream(
          line,
          { envs: { ...this.env, ...options.env } },
          controller.signal,
        );
        for await (const event of events) {
          if (event.type === 'stdout') await stdout.push(encodeUtf8(event.text ?? ''));
          else if (event.type === 'stderr') {
            let text = event.text ?? '';
            // The wrapper's first line on stderr says the pipe is there; the process's own follow it.
            if (header !== undefined) {
              header += text;
              const newline = header.indexOf('\n');
              if (newline === -1) continue;
              if (header.slice(0, newline) === READY_MARK) started();
              text = header.slice(newline + 1);
              header = undefined;
            }
            if (text !== '') void stderr.push(encodeUtf8(text));
          } else if (event.type === 'execution_complete' || event.type === 'error') {
            const end = exitOf(event);
            exit = 'exitCode' in end ? { exitCode: end.exitCode } : { exitCode: -1 };
          }
        }
      } catch {
        // The stream broke or was cut: the process is gone with it.
      } finally {
        over = true;
        started();
        stdout.end();
        stderr.end();
      }
      return exit;
    })();
    await init;
    if (over) {
      const exit = await exited;
      throw new WsError('BACKEND_ERROR', `spawn ${argv[0]} failed (exit code ${exit.exitCode})`);
    }
    const process = pipedProcess(this.sandbox, dir, stdout, stderr, exited, controller, () => over);
    this.spawned.add(process);
    void exited.then(() => this.spawned.delete(process));
    const onAbort = () => void process.kill('SIGKILL');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // An abort while the command was starting fired no listener: act on it now.
    if (options.signal?.aborted) onAbort();
    void exited.then(() => options.signal?.removeEventListener('abort', onAbort));
    return process;
  }

  async readFile(path: string, options: FileOptions = {}): Promise<Uint8Array> {
    return collectBytes(await this.readStream(path, options));
  }

  async readStream(path: string, options: ReadStreamOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    throwIfAborted(options.signal);
    const target = resolveSandboxPath(this.workdir, path);
    // The SDK's iterator never cancels its download when stopped early: this object cuts it then.
    const { started: iterator, cancel } = this.downloads.start(() => {
      const downloading = this.sandbox.files.readBytesStream(target)[Symbol.asyncIterator]();
      // Its first step sends the request (and fails for a missing file).
      return { downloading, first: downloading.next() };
    });
    // The first chunk (or the error of a missing file) is awaited here, so a failure is this call's.
    let first: IteratorResult<Uint8Array>;
    try {
      first = await iterator.first;
    } catch (error) {
      if (options.signal?.aborted) throw abortError(options.signal);
      throw translateOpenSandboxError(error, `reading ${target}`, target);
    }
    const signal = options.signal;
    return (async function* () {
      try {
        if (first.done) return;
        yield first.value;
        for (;;) {
          throwIfAborted(signal);
          const { done, value } = await iterator.downloading.next();
          if (done) return;
          yield value;
        }
      } catch (error) {
        if (signal?.aborted) throw abortError(signal);
        throw translateOpenSandboxError(error, `reading ${target}`, target);
      } finally {
        cancel();
      }
    })();
  }

  /**
   * Writes a file whole or not at all: a command resolves the target's links and makes a temporary
   * file beside it, execd's file API uploads the bytes into it, and a second command gives it the
   * mode and renames it over the target.
   */
  async writeFile(path: string, data: Uint8Array | string, options: WriteOptions = {}): Promise<void> {
    const bytes = typeof data === 'string' ? encodeUtf8(data) : data;
    await writeThroughTemporary(
      this,
      resolveSandboxPath(this.workdir, path),
      options,
      (temporary) => this.put(temporary, bytes),
      (error, target) => translateOpenSandboxError(error, `writing ${target}`, target),
    );
  }

  /**
   * Uploads `bytes` to `path` in one request; once a request was refused as too large (413, from a
   * proxy in front of execd), in parts of a quarter of that size (down to 64 KiB), each uploaded on its
   * own and joined in the sandbox. The part size found is kept for later uploads.
   */
  private async put(path: string, bytes: Uint8Array, mode?: number): Promise<void> {
    for (;;) {
      const partBytes = this.partBytes;
      try {
        if (partBytes === undefined || bytes.byteLength <= partBytes)
          await this.sandbox.files.writeFiles([{ path, data: bytes.slice(), ...(mode ? { mode } : {}) }]);
        else await this.putInParts(path, bytes, partBytes, mode);
        return;
      } catch (error) {
        const smaller = Math.floor(Math.min(partBytes ?? bytes.byteLength, bytes.byteLength) / 4);
        if (!isTooLarge(error) || smaller < MIN_PART_BYTES) throw error;
        this.partBytes = smaller;
      }
    }
  }

  private async putInParts(path: string, bytes: Uint8Array, partBytes: number, mode?: number): Promise<void> {
    const parts: string[] = [];
    const base = `${SPOOL}/part-${randomName()}`;
    try {
      for (let offset = 0; offset < bytes.byteLength; offset += partBytes) {
        const part = `${base}.${parts.length}`;
        parts.push(part);
        await this.sandbox.files.writeFiles([
          { path: part, data: bytes.slice(offset, offset + partBytes), mode: 600 },
        ]);
      }
      const joined = parts.map(shellQuote).join(' ');
      const target = shellQuote(path);
      const chmod = mode ? ` && chmod ${String(mode)} -- ${target}` : '';
      const result = await this.sandbox.commands.run(`cat -- ${joined} > ${target}${chmod}`, {
        timeoutSeconds: 300,
      });
      if (result.exitCode !== 0)
        throw new WsError(
          'BACKEND_ERROR',
          `joining the uploaded parts of ${path} failed (exit ${result.exitCode})`,
        );
    } finally {
      if (parts.length > 0)
        void this.sandbox.commands
          .run(`rm -f -- ${parts.map(shellQuote).join(' ')}`, { timeoutSeconds: 30 })
          .catch(() => {});
    }
  }
}
