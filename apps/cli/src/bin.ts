#!/usr/bin/env node
import { isWsError } from '@ws/core';
import { cliVersion, parseCommand, UsageError } from './cli-args.js';
import { runDemo } from './demo.js';
import { runExec } from './exec.js';
import { runServe } from './serve-command.js';

const USAGE = `Usage: ws <command> [options]

Commands:
  serve    serve a workspace as an MCP server (stdio or streamable HTTP), on any backend
  exec     run one command in a workspace; output streamed, exit code passed through
  demo     a short tour of a local workspace: commands, files, instructions
  help     show this text (ws <command> --help shows a command's options)

Options:
  -h, --help       show this text
  -v, --version    print the version

Backends: local, bwrap, docker, e2b, daytona, k8s (install @ws/<backend> for any but local).
`;

const DEMO_HELP = `Usage: ws demo [--workdir DIR] [--keep]

Opens a local workspace (a temporary folder unless --workdir), runs a few commands, writes and
reads files, and prints each step with its timing.

Options:
  --workdir DIR    use this host folder (kept afterwards)
  --keep           keep the temporary folder
  -h, --help       show this text
`;

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
      return runServe(rest, signal);
    case 'exec':
      return runExec(rest, signal);
    case 'demo': {
      const { values } = parseCommand('demo', rest, {
        workdir: { type: 'string' },
        keep: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      });
      if (values.help) {
        process.stdout.write(DEMO_HELP);
        return 0;
      }
      return runDemo({
        ...(values.workdir !== undefined ? { workdir: values.workdir } : {}),
        keep: values.keep ?? false,
      });
    }
    default:
      throw new UsageError(
        command.startsWith('-')
          ? `unknown option ${command} (see ws --help)`
          : `unknown command ${JSON.stringify(command)} (see ws --help)`,
      );
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
