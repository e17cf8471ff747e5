import { BACKEND_HELP, BACKEND_OPTIONS, openWorkspace } from './backends.js';
import { parseCommand, parseDuration, UsageError } from './cli-args.js';

export const EXEC_HELP = `Usage: ws exec [options] [--] <command> [args…]

Runs one command in a workspace, streams its stdout and stderr as they come and exits with its
exit code (124 when --timeout killed it). The command is argv: no shell unless you run one,
as in: ws exec -- sh -c 'echo $HOME'.

Options:
  --cwd DIR                working directory (relative to the workdir)
  --timeout TIME           kill the command and every process it started after TIME (90s, 2m)
  -i, --interactive        pass this process's stdin to the command (default: closed)
  --json                   print {"exitCode", "stdout", "stderr", "timedOut", "truncated"} at the end
                           instead of streaming
  -h, --help               show this text

${BACKEND_HELP}`;

const EXEC_OPTIONS = {
  ...BACKEND_OPTIONS,
  cwd: { type: 'string' },
  timeout: { type: 'string' },
  interactive: { type: 'boolean', short: 'i' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const write = (stream: NodeJS.WriteStream, chunk: Uint8Array) =>
  new Promise<void>((resolve) => {
    stream.write(chunk, () => resolve());
  });

export async function runExec(args: string[], signal: AbortSignal): Promise<number> {
  const { values, positionals: argv } = parseCommand('exec', args, EXEC_OPTIONS, true);
  if (values.help) {
    process.stdout.write(EXEC_HELP);
    return 0;
  }
  if (argv.length === 0) throw new UsageError('ws exec: no command given (ws exec -- <command> [args…])');
  const timeoutMs = values.timeout === undefined ? undefined : parseDuration('timeout', values.timeout);
  const opened = await openWorkspace(values, signal);
  let streamedStderr = false;
  try {
    const result = await opened.workspace.getSandbox().exec(argv, {
      signal,
      ...(values.cwd !== undefined ? { cwd: values.cwd } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(values.interactive ? { stdin: process.stdin as AsyncIterable<Uint8Array> } : {}),
      ...(values.json
        ? {}
        : {
            // Returning the write's promise pauses reading while the terminal or pipe is full.
            onStdout: (chunk: Uint8Array) => write(process.stdout, chunk),
            onStderr: (chunk: Uint8Array) => {
              streamedStderr = true;
              return write(process.stderr, chunk);
            },
          }),
    });
    // A message the backend gave without streaming it (a command that could not start) is shown too.
    if (!values.json && !streamedStderr && result.stderr.length > 0)
      await write(process.stderr, result.stderr);
    if (values.json) {
      const { exitCode, stdoutText: stdout, stderrText: stderr, timedOut, truncated } = result;
      process.stdout.write(`${JSON.stringify({ exitCode, stdout, stderr, timedOut, truncated })}\n`);
    } else if (result.timedOut) {
      process.stderr.write(`ws: the command timed out after ${values.timeout} and was killed\n`);
    }
    if (result.timedOut) return 124;
    return result.exitCode >= 0 && result.exitCode <= 255 ? result.exitCode : 1;
  } finally {
    await opened.dispose();
  }
}
