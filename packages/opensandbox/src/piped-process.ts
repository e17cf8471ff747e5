// The handle of a process spawned through execd: its input goes into a named pipe, a batch per command.
import { randomBytes } from 'node:crypto';
import type { Sandbox } from '@alibaba-group/opensandbox';
import { type ProcessExit, type SandboxProcess, WsError } from '@ws/core';
import { type ChunkQueue, encodeUtf8, settledWithin, shellQuote } from '@ws/core/backend';

/** Most bytes of input sent to a spawned process per command. */
const WRITE_CHUNK_BYTES = 8 * 1024 * 1024;
/** Input up to this size travels in the command line as base64 (far below its 128 KiB limit); more is uploaded first. */
const INLINE_WRITE_BYTES = 48 * 1024;
/** How long one write to a spawned process's input may take before it is given up. */
const WRITE_TIMEOUT_MS = 30_000;
/** How long a killed process's command stream may stay open before it is cut. */
const KILL_GRACE_MS = 10_000;
/** Input of a spawned process accepted ahead of its delivery. */
const INPUT_BUFFER_BYTES = 8 * 1024 * 1024;

/** A fresh random name, for the files and folders of the spool. */
export function randomName(): string {
  return randomBytes(12).toString('hex');
}

/**
 * The {@link SandboxProcess} of a command spawned in its own folder `dir` (see
 * `OpenSandboxSandbox.spawn`): each batch of writes goes into the named pipe `dir/in` through one
 * command, signals go to the process group whose leader's pid is in `dir/pid`, and `closeStdin` ends
 * the process holding the pipe open (`dir/holder`). `controller` cuts the command's stream; `isOver`
 * says whether the command has ended.
 */
export function pipedProcess(
  sandbox: Sandbox,
  dir: string,
  stdout: ChunkQueue,
  stderr: ChunkQueue,
  exited: Promise<ProcessExit>,
  controller: AbortController,
  isOver: () => boolean,
): SandboxProcess {
  const d = shellQuote(dir);
  // Input waits here, as in a pipe's buffer: a write is accepted at once while less than
  // INPUT_BUFFER_BYTES wait, so the pieces a writer makes one after the other go in one command.
  const pending: Uint8Array[] = [];
  let queued = 0;
  const roomWaiters: (() => void)[] = [];
  let failure: WsError | undefined;
  let pumping: Promise<void> | undefined;
  let closed = false;
  const release = () => {
    for (const wake of roomWaiters.splice(0)) wake();
  };
  // Sends what is queued, a batch per command, until the queue is empty or a command fails.
  const pump = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    while (pending.length > 0 && failure === undefined) {
      const batch: Uint8Array[] = [];
      let size = 0;
      while (pending.length > 0 && size < WRITE_CHUNK_BYTES) {
        const next = pending[0]!;
        const room = WRITE_CHUNK_BYTES - size;
        if (next.byteLength > room) {
          batch.push(next.subarray(0, room));
          pending[0] = next.subarray(room);
          size += room;
          break;
        }
        batch.push(next);
        pending.shift();
        size += next.byteLength;
      }
      const bytes = Buffer.concat(batch);
      try {
        if (isOver()) throw new Error('the process has exited');
        let line: string;
        if (bytes.byteLength <= INLINE_WRITE_BYTES) {
          line = `[ -p ${d}/in ] || exit 3; printf '%s' '${bytes.toString('base64')}' | base64 -d > ${d}/in`;
        } else {
          // Too much for one command line: uploaded into the process's folder, then copied in.
          const part = `${dir}/part-${randomName()}`;
          await sandbox.files.writeFiles([{ path: part, data: bytes, mode: 600 }]);
          line = `[ -p ${d}/in ] || { rm -f -- ${shellQuote(part)}; exit 3; }; cat -- ${shellQuote(part)} > ${d}/in; c=$?; rm -f -- ${shellQuote(part)}; exit $c`;
        }
        const result = await sandbox.commands.run(line, { timeoutSeconds: WRITE_TIMEOUT_MS / 1000 });
        if (result.exitCode !== 0)
          throw new Error(`the process no longer reads its input (exit code ${result.exitCode})`);
      } catch (error) {
        failure = new WsError('CONFLICT', 'The process no longer accepts input', { cause: error });
        pending.length = 0;
      }
      queued -= size;
      if (failure !== undefined) queued = 0;
      release();
    }
  };
  const kick = (): void => {
    if (pumping) return;
    pumping = pump().finally(() => {
      pumping = undefined;
      if (pending.length > 0 && failure === undefined) kick();
    });
  };
  const write = async (chunk: Uint8Array | string): Promise<void> => {
    const bytes = typeof chunk === 'string' ? encodeUtf8(chunk) : chunk;
    if (failure) throw failure;
    if (closed || isOver()) throw new WsError('CONFLICT', 'The process no longer accepts input');
    if (bytes.byteLength === 0) return;
    while (queued >= INPUT_BUFFER_BYTES && failure === undefined)
      await new Promise<void>((resolve) => roomWaiters.push(resolve));
    if (failure) throw failure;
    pending.push(bytes.slice());
    queued += bytes.byteLength;
    kick();
  };
  const drained = async () => {
    while (pumping) await pumping;
  };
  const signalGroup = async (signal: NodeJS.Signals) => {
    if (isOver()) return;
    const name = signal.replace(/^SIG/, '');
    const result = await sandbox.commands
      .run(`[ -f ${d}/pid ] && kill -s ${shellQuote(name)} -- "-$(cat ${d}/pid)"`, { timeoutSeconds: 30 })
      .catch(() => undefined);
    // Without the signal delivered, ending the stream ends the process group (execd kills it).
    if (result?.exitCode !== 0) controller.abort();
  };
  return {
    pid: undefined,
    stdout: stdout.iterate(),
    stderr: stderr.iterate(),
    write,
    closeStdin: async () => {
      if (closed) return;
      closed = true;
      await drained();
      if (isOver()) return;
      await sandbox.commands
        .run(`[ -f ${d}/holder ] && kill "$(cat ${d}/holder)" 2>/dev/null; exit 0`, { timeoutSeconds: 30 })
        .catch(() => {});
    },
    kill: signalGroup,
    exited,
    [Symbol.asyncDispose]: async () => {
      // Output nobody will read is dropped: a full queue holds the command stream, and with it the exit.
      stdout.end();
      stderr.end();
      await signalGroup('SIGKILL');
      // A stream still open after the kill is cut (execd then ends the command).
      if (!(await settledWithin(exited, KILL_GRACE_MS))) controller.abort();
      await exited;
    },
  };
}
