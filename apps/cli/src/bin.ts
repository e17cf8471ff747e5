#!/usr/bin/env node
import { isWsError } from '@ws/core';
import { cliVersion, closest, parseCommand, parseDuration, UsageError } from './cli-args.js';

// Each command's module (and the MCP SDK and backends it loads) is loaded when it runs: the usage,
// the version and a mistyped command answer without them.

const USAGE = `Usage: ws <command> [options]

Commands:
  serve    serve a workspace as an MCP server (stdio or streamable HTTP), on any backend
  exec     run one command in a workspace; output streamed, exit code passed through
  ls       list what workspaces of a backend left (containers, sandboxes, leftover files)
  gc       remove what workspaces of a backend left once idle for a while
  demo     a short tour of a local workspace: a skill, an MCP server, every tool, offloading
  help     show this text (ws <command> --help shows a command's options)

Options:
  -h, --help       show this text
  -v, --version    print the version

Every command takes --json (output for scripts) and --help. Backend options come from flags, the
WS_* environment variables or a JSON config file (--config FILE or WS_CONFIG), flags first.

Backends: local, bwrap, docker, e2b, daytona, k8s, opensandbox (install @ws/<backend> for any but
local).
`;

const DEMO_HELP = `Usage: ws demo [--workdir DIR] [--keep] [--json]

A short tour of a local workspace (a temporary folder unless --workdir): installs a skill, adds an
MCP server (a small node script written into the workspace), calls every tool an agent gets
(Bash, Write, Read, Edit, Glob, Grep, the MCP server's tool and Skill), offloads context with an
image, and shows where everything landed.

Options:
  --workdir DIR    use this host folder (kept afterwards)
  --keep           keep the temporary folder
  --json           print one JSON summary (tools, calls, files) instead of the tour
  --timeout TIME   give up after TIME (default 60s)
  -h, --help       show this text
`;

/** The subcommands, for "did you mean". */
const COMMANDS = ['serve', 'exec', 'ls', 'gc', 'demo', 'help', 'version'] as const;

async function main(argv: string[], signal: AbortSignal): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
      process.stderr.write(USAGE);
      return 2;
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    case 'version':
    case '--version':
    case '-v':
      process.stdout.write(`${cliVersion()}\n`);
      return 0;
    case 'serve':
      return (await import('./serve-command.js')).runServe(rest, signal);
    case 'exec':
      return (await import('./exec.js')).runExec(rest, signal);
    case 'ls':
      return (await import('./gc-command.js')).runLs(rest, signal);
    case 'gc':
      return (await import('./gc-command.js')).runGc(rest, signal);
    case 'demo': {
      const { values } = parseCommand('demo', rest, {
        workdir: { type: 'string' },
        keep: { type: 'boolean' },
        json: { type: 'boolean' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      });
      if (values.help) {
        process.stdout.write(DEMO_HELP);
        return 0;
      }
      const { runDemo } = await import('./demo.js');
      return runDemo(
        {
          workdir: values.workdir,
          keep: values.keep ?? false,
          json: values.json ?? false,
          timeoutMs: parseDuration('timeout', values.timeout ?? '60s'),
        },
        signal,
      );
    }
    default: {
      const near = command.startsWith('-')
        ? closest(command.replace(/^-+/, ''), ['help', 'version'])
        : closest(command, COMMANDS);
      const meant = near ? `; did you mean ${command.startsWith('-') ? '--' : ''}${near}?` : '';
      throw new UsageError(
        command.startsWith('-')
          ? `unknown option ${command}${meant} (see ws --help)`
          : `unknown command ${JSON.stringify(command)}${meant} (see ws --help)`,
      );
    }
  }
}

/** One line for any failure; the stack only with WS_DEBUG=1. */
function describeFailure(error: unknown): string {
  if (interrupt.signal.aborted) return (interrupt.signal.reason as Error).message;
  if (process.env.WS_DEBUG === '1' && error instanceof Error && error.stack) return error.stack;
  const text = isWsError(error)
    ? `${error.code}: ${error.message}`
    : error instanceof Error
      ? error.message
      : String(error);
  return text.split('\n')[0] ?? text;
}

// Ctrl-C or SIGTERM aborts the running command (which kills what it started and closes the
// workspace); a second one exits at once.
const interrupt = new AbortController();
for (const name of ['SIGINT', 'SIGTERM'] as const) {
  process.on(name, () => {
    if (interrupt.signal.aborted) process.exit(130);
    interrupt.abort(new Error(`interrupted by ${name}`));
  });
}

main(process.argv.slice(2), interrupt.signal).then(
  (code) => {
    // Backend clients may hold sockets open (keep-alive agents); the command is done, so leave.
    process.exitCode = code;
    setImmediate(() => process.exit());
  },
  (error: unknown) => {
    const line = describeFailure(error);
    process.stderr.write(line.startsWith('ws ') ? `${line}\n` : `ws: ${line}\n`);
    process.exitCode = error instanceof UsageError ? 2 : interrupt.signal.aborted ? 130 : 1;
    setImmediate(() => process.exit());
  },
);
