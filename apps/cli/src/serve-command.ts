import { BACKEND_HELP, BACKEND_OPTIONS, openWorkspace } from './backends.js';
import { cliVersion, parseCommand, parsePort, UsageError } from './cli-args.js';
import { checkHttpBind, type ServeHandle, serveHttp, serveStdio, ToolCatalog } from './serve.js';
import { resolveSettings } from './settings.js';

export const SERVE_HELP = `Usage: ws serve [--stdio | --http PORT] [options]

Serves a workspace as an MCP server: its tools Bash, Read, Write, Edit, Glob and Grep, plus the
tools of its MCP servers as mcp__<server>__<tool>. Cancelling a call kills what it started.
The workspace is closed when the client disconnects (stdio) or on Ctrl-C / SIGTERM.

Options:
  --stdio                  speak MCP over stdin/stdout (the default)
  --http PORT              speak streamable HTTP at http://HOST:PORT/mcp (0: any free port)
  --host HOST              address to bind for --http (default 127.0.0.1; any other needs --token)
  --token TOKEN            require "Authorization: Bearer TOKEN" on every HTTP request   [WS_TOKEN]
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
  const token = values.token ?? process.env.WS_TOKEN;
  const http =
    values.http === undefined
      ? undefined
      : { port: parsePort(values.http), host: values.host ?? '127.0.0.1', token: token || undefined };
  if (!http && (values.host !== undefined || values.token !== undefined)) {
    throw new UsageError('ws serve: --host and --token apply to --http only');
  }
  const maxText = values['max-result-chars'];
  if (maxText !== undefined && !/^[1-9]\d*$/.test(maxText)) {
    throw new UsageError(`--max-result-chars takes a positive whole number, not ${JSON.stringify(maxText)}`);
  }
  const maxResultChars = maxText === undefined ? undefined : Number(maxText);
  if (http) checkHttpBind(http); // refuse before opening anything
  resolveSettings(values); // bad backend options fail before any I/O as well

  const opened = await openWorkspace(values, signal);
  let handle: ServeHandle | undefined;
  try {
    const catalog = new ToolCatalog(opened.workspace);
    const version = cliVersion();
    handle = http
      ? await serveHttp(opened.workspace, catalog, version, { ...http, maxResultChars })
      : await serveStdio(opened.workspace, catalog, version, maxResultChars);
    const where = handle.url ?? 'stdio';
    process.stderr.write(`ws: serving the ${opened.backend} workspace ${opened.workspace.id} at ${where}\n`);
    if (values.json && handle.url) process.stdout.write(`${JSON.stringify({ url: handle.url })}\n`);
    const stopped = new Promise<void>((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await Promise.race([handle.done, stopped]);
    return 0;
  } finally {
    await handle?.close().catch(() => {});
    await opened.dispose();
  }
}
