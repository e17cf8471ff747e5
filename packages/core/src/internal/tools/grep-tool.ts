import { posix } from 'node:path';
import { isWsError, throwIfAborted } from '../../contracts/errors.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import { checkInput, errorResult, failureResult, type ToolEnvironment, textResult } from './common.js';
import {
  type GrepOutputMode,
  OUTPUT_CAP_BYTES,
  type SearchPlan,
  searchWithGrep,
  searchWithRipgrep,
} from './grep-search.js';

/** Results returned when `head_limit` is not given. */
export const GREP_DEFAULT_HEAD_LIMIT = 250;
/** Grep's time limit, in milliseconds. */
export const GREP_TIMEOUT_MS = 30_000;

export type { GrepOutputMode } from './grep-search.js';

export interface GrepInput {
  pattern: string;
  path?: string;
  output_mode?: GrepOutputMode;
  glob?: string;
  type?: string;
  '-A'?: number;
  '-B'?: number;
  '-C'?: number;
  context?: number;
  '-n'?: boolean;
  '-i'?: boolean;
  multiline?: boolean;
  head_limit?: number;
  offset?: number;
}

const DESCRIPTION = `Searches file contents in the workspace with regular expressions (ripgrep syntax).

- \`pattern\` is a regular expression, such as \`log.*Error\` or \`function\\s+\\w+\`; escape literal braces (\`interface\\{\\}\`).
- \`path\` is a file or directory (default: the workspace directory; a relative path is taken from there).
- \`output_mode\`: \`files_with_matches\` (default) lists matching files, \`content\` shows matching lines, \`count\` shows matches per file.
- Filter files with \`glob\` (such as "*.js" or "*.{ts,tsx}") or \`type\` (such as "js", "py", "rust").
- In content mode: \`-n\` line numbers (default true), \`-A\`/\`-B\`/\`-C\` or \`context\` lines around matches.
- \`-i\` ignores case; \`multiline\` lets patterns span lines and \`.\` match newlines.
- Results are sorted by path and paginated: \`head_limit\` (default ${GREP_DEFAULT_HEAD_LIMIT}, 0 for all) and \`offset\`.
- Hidden files are searched; .gitignore is respected; version-control directories are skipped.
- Use Grep rather than running grep or rg through Bash.`;

/** Splits the `glob` parameter like ripgrep users write it: on whitespace, then on commas outside braces. */
export function splitGlobs(value: string | undefined): string[] {
  if (!value) return [];
  const globs: string[] = [];
  for (const token of value.split(/\s+/)) {
    if (token === '') continue;
    if (token.includes('{')) globs.push(token);
    else globs.push(...token.split(',').filter((part) => part !== ''));
  }
  return globs;
}

/** The `Grep` tool: ripgrep inside the sandbox, or `find` + `grep` where ripgrep is missing. */
export function createGrepTool(environment: ToolEnvironment): Tool<GrepInput> {
  const inputSchema = {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'The regular expression to search for.' },
      path: {
        type: 'string',
        description: 'File or directory to search (default: the workspace directory).',
      },
      output_mode: {
        type: 'string',
        enum: ['content', 'files_with_matches', 'count'],
        description: 'What to return (default files_with_matches).',
        default: 'files_with_matches',
      },
      glob: {
        type: 'string',
        description: 'Only search files matching this glob, such as "*.js" or "*.{ts,tsx}".',
      },
      type: {
        type: 'string',
        description: 'Only search files of this type, such as "js", "py", "rust", "go", "java".',
      },
      '-A': { type: 'integer', minimum: 0, description: 'Lines to show after each match (content mode).' },
      '-B': { type: 'integer', minimum: 0, description: 'Lines to show before each match (content mode).' },
      '-C': {
        type: 'integer',
        minimum: 0,
        description: 'Lines to show before and after each match (content mode).',
      },
      context: { type: 'integer', minimum: 0, description: 'Same as -C.' },
      '-n': {
        type: 'boolean',
        description: 'Show line numbers (content mode, default true).',
        default: true,
      },
      '-i': { type: 'boolean', description: 'Ignore case.', default: false },
      multiline: {
        type: 'boolean',
        description: 'Let the pattern span lines; `.` matches newlines.',
        default: false,
      },
      head_limit: {
        type: 'integer',
        minimum: 0,
        description: `Return at most this many results (default ${GREP_DEFAULT_HEAD_LIMIT}; 0 for all).`,
      },
      offset: {
        type: 'integer',
        minimum: 0,
        description: 'Skip this many results first (default 0).',
        default: 0,
      },
    },
    required: ['pattern'],
    additionalProperties: false,
  } as const;
  return {
    name: 'Grep',
    description: DESCRIPTION,
    inputSchema,
    annotations: { readOnlyHint: true, concurrencySafe: true, title: 'Search file contents' },
    async call(rawInput: GrepInput, options: ToolCallOptions = {}): Promise<ToolResult> {
      throwIfAborted(options.signal);
      const input = withAliases(rawInput);
      const invalid = checkInput(inputSchema, input);
      if (invalid) return errorResult(invalid);
      const limit = input.head_limit ?? GREP_DEFAULT_HEAD_LIMIT;
      const offset = input.offset ?? 0;
      const mode = input.output_mode ?? 'files_with_matches';
      const plan: SearchPlan = {
        pattern: input.pattern,
        target: posix.resolve(environment.workdir, input.path ?? '.'),
        mode,
        globs: splitGlobs(input.glob),
        type: input.type,
        after: input['-A'],
        before: input['-B'],
        around: input.context ?? input['-C'],
        lineNumbers: input['-n'] ?? true,
        ignoreCase: input['-i'] ?? false,
        multiline: input.multiline ?? false,
        needed: limit === 0 ? Number.POSITIVE_INFINITY : offset + limit + 1,
        targetIsDirectory: true,
      };
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, GREP_TIMEOUT_MS);
      const onAbort = () => controller.abort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const sandbox = environment.sandbox();
        try {
          plan.targetIsDirectory =
            (await sandbox.stat(plan.target, { signal: controller.signal })).type === 'directory';
        } catch (error) {
          if (isWsError(error, 'NOT_FOUND') || isWsError(error, 'NOT_A_DIRECTORY'))
            return errorResult(`Error: Path does not exist: ${plan.target}`);
          throw error;
        }
        const useRipgrep = await environment.search.useRipgrep(sandbox, controller.signal);
        const outcome = useRipgrep
          ? await searchWithRipgrep(sandbox, plan, controller.signal)
          : await searchWithGrep(sandbox, plan, controller.signal);
        if ('error' in outcome) return errorResult(outcome.error);
        const lines = outcome.lines;
        if (lines.length === 0)
          return textResult(`No matches found for pattern: ${plan.pattern}`, {
            matches: 0,
            engine: useRipgrep ? 'ripgrep' : 'grep',
          });
        const shown = limit === 0 ? lines.slice(offset) : lines.slice(offset, offset + limit);
        let text = shown.join('\n');
        const more = limit !== 0 && lines.length > offset + limit;
        if (more)
          text += `\n\n[Showing results with pagination = limit: ${limit}${offset > 0 ? `, offset: ${offset}` : ''}]`;
        if (outcome.capped)
          text += `\n\n[Output stopped after ${OUTPUT_CAP_BYTES} bytes; narrow the search to see everything.]`;
        if (outcome.warning) text += `\n\n[Some files could not be searched: ${outcome.warning}]`;
        return textResult(text, { engine: useRipgrep ? 'ripgrep' : 'grep', shown: shown.length, more });
      } catch (error) {
        if (timedOut && !options.signal?.aborted) {
          return errorResult(
            `Ripgrep search timed out after ${GREP_TIMEOUT_MS / 1000} seconds. Try searching a more specific path or pattern.`,
          );
        }
        return failureResult(error, 'Error: ');
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
      }
    },
  };
}

function withAliases(input: GrepInput): GrepInput {
  if (typeof input !== 'object' || input === null) return input;
  const record = { ...(input as unknown as Record<string, unknown>) };
  if (record['-n'] === undefined && record.n !== undefined) record['-n'] = record.n;
  if (record['-i'] === undefined && record.i !== undefined) record['-i'] = record.i;
  if (record['-i'] === undefined && record.case_insensitive !== undefined)
    record['-i'] = record.case_insensitive;
  return record as unknown as GrepInput;
}
