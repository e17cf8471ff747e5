import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dockerMessage, runExec } from '../docker/exec.js';
import { isRecord, sendEmpty, sendJson } from '../http/http-util.js';
import { invalid, notFound, OpenSandboxHttpError, UnimplementedRequest } from './errors.js';
import { EventStreamWriter } from './event-stream.js';
import { type CommandRun, type CommandSpec, failureOf, SESSION_ROOT } from './execd-commands.js';
import { handleFiles, jsonBody } from './execd-files.js';
import { proxyRequest, proxyTarget } from './execd-proxy.js';
import { EXECD_ACCESS_TOKEN_HEADER } from './lifecycle.js';
import type { OpenSandboxLimits } from './limits.js';
import type { SandboxRecord } from './sandbox-registry.js';
import type { CommandStatusBody, CreateSessionBody } from './wire-types.js';

function commandSpec(body: Record<string, unknown>, sessionDir?: string): CommandSpec {
  const { command, cwd, timeout, uid, gid, envs } = body;
  if (typeof command !== 'string' || command.trim() === '') throw invalid('command is required');
  if (cwd !== undefined && cwd !== null && typeof cwd !== 'string') throw invalid('cwd must be a string');
  const timeoutMs = timeout === undefined || timeout === null ? 0 : Number(timeout);
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw invalid('timeout must be milliseconds');
  const id = (value: unknown, field: string): number | undefined => {
    if (value === undefined || value === null) return undefined;
    if (!Number.isInteger(value) || (value as number) < 0)
      throw invalid(`${field} must be a non-negative integer`);
    return value as number;
  };
  const user = id(uid, 'uid');
  const group = id(gid, 'gid');
  if (group !== undefined && user === undefined) throw invalid('uid is required when gid is provided');
  const env: string[] = [];
  if (envs !== undefined && envs !== null) {
    if (!isRecord(envs)) throw invalid('envs must be an object of strings');
    for (const [name, value] of Object.entries(envs)) {
      if (typeof value !== 'string' || name === '' || name.includes('=') || name.includes('\0'))
        throw invalid(`envs.${name} must be a string with a name without '='`);
      env.push(`${name}=${value}`);
    }
  }
  return {
    command,
    cwd: typeof cwd === 'string' ? cwd : '',
    env,
    timeoutMs,
    user: user === undefined ? undefined : group === undefined ? String(user) : `${user}:${group}`,
    ...(sessionDir !== undefined ? { sessionDir } : {}),
  };
}

/** Streams a command's events; a background one's stream ends after `init`. */
async function streamCommand(
  record: SandboxRecord,
  response: ServerResponse,
  spec: CommandSpec,
  background: boolean,
): Promise<void> {
  const writer = new EventStreamWriter(response);
  const run = record.commands.start(spec, {
    onStdout: (text) => writer.send({ type: 'stdout', text }),
    onStderr: (text) => writer.send({ type: 'stderr', text }),
    keepOutput: background,
  });
  writer.send({ type: 'init', text: run.id });
  if (background) {
    writer.end();
    void run.done.catch(() => {});
    return;
  }
  // A client that goes away takes its command with it.
  response.once('close', () => {
    if (run.running) void run.kill('disconnect');
  });
  try {
    const outcome = await run.done;
    const error = failureOf(outcome);
    if (error) writer.send({ type: 'error', error });
    else writer.send({ type: 'execution_complete', execution_time: Date.now() - run.startedAt.getTime() });
  } catch (error) {
    const message = dockerMessage(error);
    writer.send({
      type: 'error',
      error: { ename: 'CommandExecError', evalue: message, traceback: [message] },
    });
  }
  writer.end();
}

function statusOf(run: CommandRun): CommandStatusBody {
  const error = run.outcome ? failureOf(run.outcome) : undefined;
  return {
    id: run.id,
    content: run.spec.command,
    running: run.running,
    exit_code: run.outcome ? (run.outcome.killed ? -1 : run.outcome.exitCode) : null,
    error: error ? error.traceback.join('\n') : '',
    started_at: run.startedAt.toISOString(),
    finished_at: run.finishedAt?.toISOString() ?? null,
  };
}

function requireRun(record: SandboxRecord, id: string): CommandRun {
  const run = record.commands.get(id);
  if (!run) throw notFound(`command ${id} not found`);
  return run;
}

function sessionDir(sessionId: string): string {
  if (!/^[A-Za-z0-9-]{1,64}$/.test(sessionId)) throw notFound(`session ${sessionId} not found`);
  return `${SESSION_ROOT}/${sessionId}`;
}

async function requireSession(record: SandboxRecord, sessionId: string): Promise<string> {
  const dir = sessionDir(sessionId);
  const probe = await runExec(record.container, ['test', '-d', dir]);
  if (probe.exitCode !== 0) throw notFound(`session ${sessionId} not found`);
  return dir;
}

async function objectOf(request: IncomingMessage): Promise<Record<string, unknown>> {
  const body = (await jsonBody(request)) ?? {};
  if (!isRecord(body))
    throw new OpenSandboxHttpError(400, 'INVALID_REQUEST_BODY', 'the body must be a JSON object');
  return body;
}

const sessionQueues = new WeakMap<SandboxRecord, Map<string, Promise<void>>>();

const CREATE_SESSION = `mkdir -p -m 700 -- "$1" || exit 1
if [ -n "$2" ]; then cd -- "$2" 2>/dev/null || { rm -rf -- "$1"; echo "chdir $2: no such file or directory" >&2; exit 1; }; fi
pwd > "$1/cwd"`;

/** The execd API of one sandbox (`path` is below the sandbox's endpoint prefix). */
/** What execd checks before serving anything: its access token, and that the sandbox runs. */
export function checkExecdAccess(record: SandboxRecord, request: IncomingMessage): void {
  const token = request.headers[EXECD_ACCESS_TOKEN_HEADER.toLowerCase()];
  if (record.accessToken !== undefined && token !== record.accessToken)
    throw new OpenSandboxHttpError(
      401,
      'UNAUTHORIZED',
      `missing or invalid ${EXECD_ACCESS_TOKEN_HEADER} header`,
    );
  if (record.state !== 'Running')
    throw new OpenSandboxHttpError(
      503,
      'SANDBOX_NOT_RUNNING',
      `sandbox ${record.id} is ${record.state}${record.message ? `: ${record.message}` : ''}`,
    );
}

export async function handleExecd(
  record: SandboxRecord,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  query: URLSearchParams,
  limits: Readonly<OpenSandboxLimits>,
): Promise<void> {
  checkExecdAccess(record, request);
  const proxied = proxyTarget(path);
  if (proxied) {
    const search = query.toString();
    await proxyRequest(record, request, response, proxied, search ? `?${search}` : '');
    return;
  }
  const method = request.method ?? 'GET';
  if (method === 'GET' && path === '/ping') {
    sendEmpty(response, 200);
    return;
  }
  if (method === 'POST' && path === '/command') {
    const body = await objectOf(request);
    await streamCommand(record, response, commandSpec(body), body.background === true);
    return;
  }
  if (method === 'DELETE' && path === '/command') {
    const id = query.get('id');
    if (!id) throw invalid('missing query parameter id');
    await requireRun(record, id).kill('interrupt');
    sendJson(response, 200, {});
    return;
  }
  const status = /^\/command\/status\/([^/]+)$/.exec(path);
  if (method === 'GET' && status) {
    sendJson(response, 200, statusOf(requireRun(record, decodeURIComponent(status[1]!))));
    return;
  }
  const logs = /^\/command\/([^/]+)\/logs$/.exec(path);
  if (method === 'GET' && logs) {
    const run = requireRun(record, decodeURIComponent(logs[1]!));
    const cursor = Number(query.get('cursor') ?? 0);
    if (!Number.isInteger(cursor) || cursor < 0) throw invalid('cursor must be a non-negative integer');
    const all = Buffer.concat(run.output);
    const content = all.subarray(Math.min(cursor, all.length));
    response.writeHead(200, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(content.length),
      'EXECD-COMMANDS-TAIL-CURSOR': String(all.length),
    });
    response.end(content);
    return;
  }
  if (method === 'POST' && path === '/session') {
    const body = await objectOf(request);
    if (body.cwd !== undefined && body.cwd !== null && typeof body.cwd !== 'string')
      throw invalid('cwd must be a string');
    const sessionId = randomUUID();
    const created = await runExec(record.container, [
      'sh',
      '-c',
      CREATE_SESSION,
      'sh',
      sessionDir(sessionId),
      typeof body.cwd === 'string' ? body.cwd : '',
    ]);
    if (created.exitCode !== 0)
      throw invalid(created.stderr.toString('utf8').trim() || 'cannot create the session');
    const opened: CreateSessionBody = { session_id: sessionId };
    sendJson(response, 200, opened);
    return;
  }
  const session = /^\/session\/([^/]+)(\/run)?$/.exec(path);
  if (session) {
    const sessionId = decodeURIComponent(session[1]!);
    if (method === 'POST' && session[2]) {
      const body = await objectOf(request);
      const dir = await requireSession(record, sessionId);
      const spec = commandSpec(body, dir);
      // A session is one shell: its commands run one after the other.
      const queues = sessionQueues.get(record) ?? new Map<string, Promise<void>>();
      sessionQueues.set(record, queues);
      const current = (queues.get(dir) ?? Promise.resolve()).then(() =>
        streamCommand(record, response, spec, false),
      );
      const settled = current.catch(() => {});
      queues.set(dir, settled);
      void settled.then(() => {
        if (queues.get(dir) === settled) queues.delete(dir);
      });
      await current;
      return;
    }
    if (method === 'DELETE' && !session[2]) {
      const dir = await requireSession(record, sessionId);
      await Promise.all(record.commands.inSession(dir).map((run) => run.kill('interrupt')));
      await runExec(record.container, ['rm', '-rf', '--', dir]);
      sendJson(response, 200, {});
      return;
    }
  }
  if (await handleFiles(record, request, response, path, query, limits.uploadBytes)) return;
  throw new UnimplementedRequest(`${method} /execd${path}`);
}
