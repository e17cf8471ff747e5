import { BACKEND_HELP, BACKEND_OPTIONS, openWorkspace } from './backends.js';
import { cliVersion, parseCommand, parsePort, UsageError } from './cli-args.js';
import { type ServeHandle, serveHttp, serveStdio, ToolCatalog } from './serve.js';
import { httpCredential } from './serve-credential.js';
import { resolveSettings } from './settings.js';

export const SERVE_HELP = `Usage: ws serve [--stdio | --http PORT] [options]

Serves a workspace as an MCP server: its tools Bash, Read, Write, Edit, Glob and Grep, plus the
tools of its MCP servers as mcp__<server>__<tool>. Cancelling a call kills what it started.
The workspace is closed when the client disconnects (stdio) or on Ctrl-C / SIGTERM.

Options:
  --stdio                  speak MCP over stdin/stdout (the default)
  --http PORT              speak streamable HTTP at http://HOST:PORT/mcp (0: any free port)
  --host HOST              address to bind for --http (default 127.0.0.1)
  --token-file FILE        the token every HTTP request must send as "Authorization: Bearer TOKEN",
                           read from FILE (mode 0600; at least 16 characters)            [WS_TOKEN]
                           Without either, a token is generated into a private file whose path
                           is printed (and given as "tokenFile" by --json); it goes when ws exits.
  --max-sessions N         most MCP sessions open at once over HTTP (default 16)
  --session-idle SECONDS   close an HTTP session after this long without a request (default 900)
  --max-result-chars N     offload longer text results into the workspace's sessions/ folder and
                           return a preview with the file's path (default 100000)
  --json                   print {"url": …} on stdout once the HTTP server listens
  -h, --help               show this text

${BACKEND_HELP}`;

const SERVE_OPTIONS = {
  ...BACKEND_OPTIONS,
  stdio: { type: 'boolean' },
  http: { type: 'string' },
  host: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'max-sessions': { type: 'string' },
  'session-idle': { type: 'string' },
  'max-result-chars': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function runServe(args: string[], signal: AbortSignal): Promise<number> {
  const { values } = parseCommand('serve', args, SERVE_OPTIONS);
  if (values.help) {
    process.stdout.write(SERVE_HELP);
    return 0;
  }
  if (values.stdio && values.http !== undefined)
    throw new UsageError('ws serve: --stdio and --http exclude each other');
  if (values.token !== undefined)
    throw new UsageError(
      'ws serve: --token would show the token to every local user (ps); set WS_TOKEN or pass --token-file FILE',
    );
  const httpOnly = ['host', 'token-file', 'max-sessions', 'session-idle'] as const;
  const misplaced = httpOnly.find((name) => values[name] !== undefined);
  if (values.http === undefined && misplaced)
    throw new UsageError(`ws serve: --${misplaced} applies to --http only`);
  const http =
    values.http === undefined
      ? undefined
      : {
          port: parsePort(values.http),
          host: values.host ?? '127.0.0.1',
          maxSessions: wholeNumber(values['max-sessions'], '--max-sessions', 16),
          sessionIdleMs: wholeNumber(values['session-idle'], '--session-idle', 900) * 1000,
        };
  const maxText = values['max-result-chars'];
  if (maxText !== undefined && !/^[1-9]\d*$/.test(maxText)) {
    throw new UsageError(`--max-result-chars takes a positive whole number, not ${JSON.stringify(maxText)}`);
  }
  const maxResultChars = maxText === undefined ? undefined : Number(maxText);
  // The credential is settled before anything opens, and leaves the environment that the
  // workspace's commands inherit.
  resolveSettings(values); // bad backend options fail before any I/O as well
  const credential = http ? await httpCredential(values['token-file']) : undefined;

  let opened: Awaited<ReturnType<typeof openWorkspace>> | undefined;
  let handle: ServeHandle | undefined;
  try {
    opened = await openWorkspace(values, signal);
    const catalog = new ToolCatalog(opened.workspace);
    const version = cliVersion();
    handle =
      http && credential
        ? await serveHttp(opened.workspace, catalog, version, {
            ...http,
            token: credential.token,
            maxResultChars,
          })
        : await serveStdio(opened.workspace, catalog, version, maxResultChars);
    const where = handle.url ?? 'stdio';
    process.stderr.write(`ws: serving the ${opened.backend} workspace ${opened.workspace.id} at ${where}\n`);
    if (credential?.generatedFile)
      process.stderr.write(
        `ws: every request needs "Authorization: Bearer <token>"; the token is in ${credential.generatedFile} (removed when ws exits)\n`,
      );
    if (values.json && handle.url)
      process.stdout.write(
        `${JSON.stringify({ url: handle.url, ...(credential?.generatedFile ? { tokenFile: credential.generatedFile } : {}) })}\n`,
      );
    const stopped = new Promise<void>((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await Promise.race([handle.done, stopped]);
    return 0;
  } finally {
    await handle?.close().catch(() => {});
    await opened?.dispose();
    credential?.dispose();
  }
}

/** A positive whole number option, or `fallback` when it is absent. @throws UsageError otherwise. */
function wholeNumber(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[1-9]\d{0,8}$/.test(value))
    throw new UsageError(`${flag} takes a positive whole number, not ${JSON.stringify(value)}`);
  return Number(value);
}
