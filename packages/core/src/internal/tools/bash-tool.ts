import { throwIfAborted } from '../../contracts/errors.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import { checkInput, errorResult, failureResult, type ToolEnvironment, textResult } from './common.js';
import { cutText, decodeLenient, normalizeNewlines } from './text.js';

/** Default time limit of one Bash call, in milliseconds. */
export const BASH_DEFAULT_TIMEOUT_MS = 120_000;
/** Largest time limit a Bash call may ask for, in milliseconds. */
export const BASH_MAX_TIMEOUT_MS = 600_000;
/** Bash output longer than this many characters is cut. */
export const BASH_MAX_OUTPUT_CHARS = 30_000;
const TRUNCATION_SUFFIX = '\n... (output truncated)';
// Enough bytes of each stream to fill BASH_MAX_OUTPUT_CHARS even if every line ended in CRLF and
// every character took four bytes; the rest is dropped while the command runs.
const STREAM_CAP_BYTES = 256 * 1024;

export interface BashInput {
  command: string;
  description?: string;
  timeout?: number;
}

const DESCRIPTION = `Runs a shell command (\`/bin/sh -c\`) in the workspace and returns its output.

- Each call starts a fresh shell in the workspace directory: \`cd\`, variables and shell state do not carry over to the next call. Prefer absolute paths.
- Quote paths that contain spaces or special characters with double quotes.
- Prefer the dedicated tools to shell equivalents: Glob instead of \`find\`/\`ls\` for finding files, Grep instead of \`grep\`/\`rg\`, Read instead of \`cat\`/\`head\`/\`tail\`, Edit instead of \`sed\`/\`awk\`, Write instead of \`echo >\`/heredocs.
- \`timeout\` is in milliseconds (default ${BASH_DEFAULT_TIMEOUT_MS}, at most ${BASH_MAX_TIMEOUT_MS}). A command that runs longer is killed together with every process it started.
- Output is stdout followed by stderr, cut after ${BASH_MAX_OUTPUT_CHARS} characters. Redirect long output to a file and read the parts you need.
- Chain dependent commands with \`&&\`; make independent calls in parallel instead. Avoid \`sleep\` loops.
- With git: never force-push, rewrite published history or skip hooks unless the user asked for it.`;

/** The `Bash` tool: one `/bin/sh -c` per call in the workdir, output capped while it streams. */
export function createBashTool(environment: ToolEnvironment): Tool<BashInput> {
  const inputSchema = {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The command to run.' },
      description: {
        type: 'string',
        description: 'What the command does, in 5–10 words, for the people watching.',
      },
      timeout: {
        type: 'integer',
        description: `Time limit in milliseconds (default ${BASH_DEFAULT_TIMEOUT_MS}, at most ${BASH_MAX_TIMEOUT_MS}).`,
        default: BASH_DEFAULT_TIMEOUT_MS,
        minimum: 0,
        maximum: BASH_MAX_TIMEOUT_MS,
      },
    },
    required: ['command'],
    additionalProperties: false,
  } as const;
  return {
    name: 'Bash',
    description: DESCRIPTION,
    inputSchema,
    annotations: {
      readOnlyHint: false,
      concurrencySafe: false,
      destructiveHint: true,
      openWorldHint: true,
      title: 'Run a shell command',
    },
    async call(input: BashInput, options: ToolCallOptions = {}): Promise<ToolResult> {
      throwIfAborted(options.signal);
      const invalid = checkInput(inputSchema, input);
      if (invalid) return errorResult(invalid);
      const command = input.command;
      const timeoutMs = Math.min(input.timeout ?? BASH_DEFAULT_TIMEOUT_MS, BASH_MAX_TIMEOUT_MS);
      let result: Awaited<ReturnType<ReturnType<ToolEnvironment['sandbox']>['exec']>>;
      try {
        result = await environment.sandbox().exec(['/bin/sh', '-c', command], {
          cwd: environment.workdir,
          timeoutMs,
          maxOutputBytes: STREAM_CAP_BYTES,
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch (error) {
        return failureResult(error, `Command failed: ${command}\nError: `);
      }
      const metadata = {
        exitCode: result.exitCode,
        timedOut: result.timedOut,
        truncated: result.truncated,
        ...(result.outOfMemory ? { outOfMemory: true } : {}),
      };
      if (result.timedOut) return errorResult(`Command timed out after ${timeoutMs}ms: ${command}`, metadata);
      const stdout = normalizeNewlines(decodeLenient(result.stdout));
      const stderr = normalizeNewlines(decodeLenient(result.stderr));
      if (result.exitCode === 0) {
        const output = stderr ? `${stdout}\n${stderr}` : stdout;
        return textResult(truncate(output, result.truncated), metadata);
      }
      let text = `Command failed: ${command}\n`;
      if (stdout) text += `\nStdout:\n${stdout}`;
      if (stderr) text += `\nStderr:\n${stderr}`;
      if (!stdout && !stderr) text += `\nExit code ${result.exitCode}, no output.`;
      if (result.outOfMemory)
        text += `\nKilled: out of memory (the workspace's memory limit). Use less memory, or open the workspace with a larger limits.memoryMiB.`;
      return errorResult(truncate(text, result.truncated), metadata);
    },
  };
}

function truncate(text: string, streamsWereCut: boolean): string {
  if (text.length > BASH_MAX_OUTPUT_CHARS) return cutText(text, BASH_MAX_OUTPUT_CHARS) + TRUNCATION_SUFFIX;
  return streamsWereCut ? text + TRUNCATION_SUFFIX : text;
}
