import type { IncomingMessage } from 'node:http';
import {
  execExitCode,
  FrameDemuxer,
  feed,
  KILL_GROUP,
  runExec,
  startExec,
  streamDone,
} from '../docker/exec.js';
import { isRecord, readJson } from '../http/http-util.js';
import { DaytonaHttpError } from './errors.js';
import type { SandboxRecord } from './sandbox-registry.js';
import type { ExecuteBody, SessionBody, SessionExecuteBody } from './sdk-types.js';
import type { Session } from './sessions.js';

/** A toolbox answer: a JSON body (200 unless `status` says otherwise), an empty `status`, or an empty 200. */
export type ToolboxResult = { body?: unknown; status?: number } | undefined;

export async function bodyObject(request: IncomingMessage): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await readJson(request, 16 << 20);
  } catch (error) {
    throw new DaytonaHttpError(400, (error as Error).message, 'INVALID_REQUEST_BODY');
  }
  if (body === undefined) return {};
  if (!isRecord(body))
    throw new DaytonaHttpError(400, 'request body must be a JSON object', 'INVALID_REQUEST_BODY');
  return body;
}

// Runs the command the daemon's way: the text goes to a shell's stdin, stdout and stderr are one stream,
// and the shell leads its own process group (a docker exec is a session leader), which a timeout kills
// whole. The pid and a bad cwd are reported on stderr, which the command's output never reaches.
// A cwd that does not exist is no failure of the request: the daemon answers it as a command that
// could not start (exit code -1, Go's error text as the result).
const EXECUTE = `cd "$1" 2>/dev/null || { printf 'ws-daytona:nocwd\\n' >&2; exit 1; }
printf 'ws-daytona:pid:%s\\n' "$$" >&2
if command -v bash >/dev/null 2>&1; then exec bash 2>&1; else exec sh 2>&1; fi`;

/** `POST /process/execute` `{command, cwd?, envs?, timeout?}` → `{exitCode, result}`; 408 on timeout. */
export async function executeCommand(
  record: SandboxRecord,
  request: IncomingMessage,
): Promise<ToolboxResult> {
  const body = await bodyObject(request);
  const command = typeof body.command === 'string' ? body.command : undefined;
  if (command === undefined || command.trim() === '') throw new DaytonaHttpError(400, 'command is required');
  const cwd = typeof body.cwd === 'string' && body.cwd !== '' ? body.cwd : record.account.home;
  const timeout = body.timeout === undefined || body.timeout === null ? 0 : Number(body.timeout);
  if (!Number.isFinite(timeout) || timeout < 0)
    throw new DaytonaHttpError(400, 'timeout must be a number of seconds');
  const env: string[] = [];
  if (body.envs !== undefined && body.envs !== null) {
    if (!isRecord(body.envs)) throw new DaytonaHttpError(400, 'envs must be an object of strings');
    for (const [name, value] of Object.entries(body.envs)) {
      if (typeof value !== 'string' || name === '' || name.includes('='))
        throw new DaytonaHttpError(400, `envs.${name} must be a string with a name without '='`);
      env.push(`${name}=${value}`);
    }
  }
  const { exec, stream } = await startExec(record.container, ['sh', '-c', EXECUTE, 'sh', cwd], {
    stdin: true,
    user: record.account.name,
    env,
  });
  const output: Buffer[] = [];
  let diagnostics = '';
  const demuxer = new FrameDemuxer((channel, payload) => {
    if (channel === 1) output.push(payload);
    else diagnostics += payload.toString('utf8');
  });
  stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
  const done = streamDone(stream);
  let timedOut = false;
  const timer =
    timeout > 0
      ? setTimeout(() => {
          timedOut = true;
          const pid = /ws-daytona:pid:(\d+)/.exec(diagnostics)?.[1];
          if (pid === undefined) stream.destroy();
          else
            void runExec(record.container, ['sh', '-c', KILL_GROUP, 'sh', pid], {
              user: record.account.name,
            }).catch(() => stream.destroy());
        }, timeout * 1000)
      : undefined;
  try {
    await feed(stream, Buffer.from(command.endsWith('\n') ? command : `${command}\n`)).catch(() => {});
    await done;
  } finally {
    if (timer) clearTimeout(timer);
    stream.destroy();
  }
  if (timedOut) throw new DaytonaHttpError(408, 'command execution timeout', 'PROCESS_EXECUTION_TIMEOUT');
  const answer: ExecuteBody = diagnostics.includes('ws-daytona:nocwd')
    ? { exitCode: -1, result: `chdir ${cwd}: no such file or directory` }
    : { exitCode: await execExitCode(exec), result: Buffer.concat(output).toString('utf8') };
  return { body: answer };
}

function describeSession(session: Session): SessionBody {
  return {
    sessionId: session.id,
    commands: [...session.commands.values()].map((command) => command.describe()),
  };
}

/** The session routes under `/process/session`; undefined when `path` is none of them. */
export async function handleSessionRoute(
  record: SandboxRecord,
  request: IncomingMessage,
  path: string,
): Promise<ToolboxResult | 'unmatched'> {
  const method = request.method;
  let parts: string[];
  try {
    parts = path
      .split('/')
      .slice(3)
      .map((part) => decodeURIComponent(part)); // '', 'process', 'session', …
  } catch {
    throw new DaytonaHttpError(400, 'malformed path parameter');
  }
  const [sessionId, kind, commandId, action] = parts;
  if (sessionId === undefined || sessionId === '') {
    if (method === 'POST') {
      const body = await bodyObject(request);
      if (typeof body.sessionId !== 'string' || body.sessionId === '')
        throw new DaytonaHttpError(400, 'sessionId is required');
      await record.sessions.create(body.sessionId, record.container, record.account, record.account.home);
      return { status: 201 };
    }
    if (method === 'GET') return { body: record.sessions.list().map(describeSession) };
    return 'unmatched';
  }
  if (parts.length === 1) {
    if (method === 'GET') return { body: describeSession(record.sessions.get(sessionId)) };
    if (method === 'DELETE') {
      await record.sessions.delete(sessionId);
      return { status: 204 };
    }
    return 'unmatched';
  }
  const session = record.sessions.get(sessionId);
  if (kind === 'exec' && parts.length === 2 && method === 'POST') return executeInSession(session, request);
  if (kind !== 'command' || commandId === undefined) return 'unmatched';
  const command = session.commands.get(commandId);
  if (!command) throw new DaytonaHttpError(404, `command ${commandId} not found`, 'PROCESS_NOT_FOUND');
  if (parts.length === 3 && method === 'GET') return { body: command.describe() };
  if (action === 'logs' && parts.length === 4 && method === 'GET') return { body: command.logs() };
  if (action === 'input' && parts.length === 4 && method === 'POST') {
    const body = await bodyObject(request);
    if (typeof body.data !== 'string') throw new DaytonaHttpError(400, 'data must be a string');
    await session.sendInput(commandId, body.data);
    return { status: 204 };
  }
  return 'unmatched';
}

async function executeInSession(session: Session, request: IncomingMessage): Promise<ToolboxResult> {
  const body = await bodyObject(request);
  if (typeof body.command !== 'string' || body.command.trim() === '')
    throw new DaytonaHttpError(400, 'command is required');
  const command = session.execute(body.command);
  if (body.runAsync === true || body.async === true) {
    const started: SessionExecuteBody = { cmdId: command.id };
    return { body: started, status: 202 };
  }
  await command.finished;
  const finished: SessionExecuteBody = { cmdId: command.id, exitCode: command.exitCode, ...command.logs() };
  return { body: finished };
}
