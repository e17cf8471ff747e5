import { posix } from 'node:path';
import { isWsError, throwIfAborted } from '../errors.js';
import type { CompleteSandbox } from '../sandbox.js';
import type { Tool, ToolCallOptions, ToolResult } from '../tool.js';
import { checkInput, errorResult, failureResult, type ToolEnvironment, textResult } from './common.js';
import { displayPath } from './display-path.js';
import { listFilesWithFind, VCS_DIRECTORIES } from './file-listing.js';
import { FILE_TYPES } from './file-types.js';
import { globToRegExp } from './glob-pattern.js';

/** Results returned when `head_limit` is not given. */
export const GREP_DEFAULT_HEAD_LIMIT = 250;
/** Grep's time limit, in milliseconds. */
export const GREP_TIMEOUT_MS = 30_000;
/** Lines longer than this many bytes are replaced by a note. */
export const GREP_MAX_COLUMNS = 500;
// Output kept of one search; head_limit 0 ("everything") stops here.
const OUTPUT_CAP_BYTES = 64 * 1024 * 1024;

export type GrepOutputMode = 'content' | 'files_with_matches' | 'count';

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

interface SearchPlan {
  pattern: string;
  target: string;
  mode: GrepOutputMode;
  globs: string[];
  type: string | undefined;
  after: number | undefined;
  before: number | undefined;
  around: number | undefined;
  lineNumbers: boolean;
  ignoreCase: boolean;
  multiline: boolean;
  /** Lines needed: offset + limit + 1 (to know whether more exist), or Infinity. */
  needed: number;
  /** Whether `target` is a directory (else one file, whose matches show no file name). */
  targetIsDirectory: boolean;
}

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

type SearchOutcome = { lines: string[]; capped: boolean; warning?: string } | { error: string };

/** How a search program's output is laid out (all with `--null` after file names). */
type OutputLayout = 'files' | 'records' | 'plain';

function layoutOf(plan: SearchPlan): OutputLayout {
  if (plan.mode === 'files_with_matches') return 'files';
  return plan.targetIsDirectory ? 'records' : 'plain';
}

/**
 * Parses search output as it streams into display lines, and stops the search once `needed` lines
 * are in when the output is already in its final order. File names are followed by NUL, so any name
 * (a newline in it included) is read exactly; names holding control characters are shown quoted.
 */
function outputParser(
  layout: OutputLayout,
  lineNumbers: boolean,
  needed: number,
  ordered: boolean,
  stop: () => void,
) {
  const entries: string[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  let stopped = false;
  const add = (entry: string) => {
    const clean = entry.endsWith('\r') ? entry.slice(0, -1) : entry;
    if (clean !== '') entries.push(clean);
  };
  const drain = (final: boolean) => {
    for (;;) {
      if (layout === 'files' || layout === 'plain') {
        const separator = layout === 'files' ? '\0' : '\n';
        const end = buffer.indexOf(separator);
        if (end === -1) break;
        const entry = buffer.slice(0, end);
        add(layout === 'files' ? displayPath(entry) : entry);
        buffer = buffer.slice(end + 1);
        continue;
      }
      const newline = buffer.indexOf('\n');
      if (buffer.startsWith('-')) {
        // Context groups are separated by "--" lines; file names are absolute, so never start with "-".
        if (newline === -1) break;
        add(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
        continue;
      }
      const nul = buffer.indexOf('\0');
      if (nul === -1) break;
      const lineEnd = buffer.indexOf('\n', nul);
      if (lineEnd === -1) break;
      const rest = buffer.slice(nul + 1, lineEnd);
      const joiner = lineNumbers && /^\d+-/.test(rest) ? '-' : ':';
      add(`${displayPath(buffer.slice(0, nul))}${joiner}${rest}`);
      buffer = buffer.slice(lineEnd + 1);
    }
    if (final && buffer !== '') {
      add(layout === 'files' ? displayPath(buffer) : buffer);
      buffer = '';
    }
  };
  return {
    entries,
    get stopped() {
      return stopped;
    },
    push(chunk: Uint8Array) {
      if (stopped) return;
      buffer += decoder.decode(chunk, { stream: true });
      drain(false);
      if (ordered && entries.length >= needed) {
        stopped = true;
        stop();
      }
    },
    finish() {
      if (stopped) return;
      buffer += decoder.decode();
      drain(true);
    },
  };
}

async function runCollecting(
  sandbox: CompleteSandbox,
  argv: string[],
  plan: SearchPlan,
  layout: OutputLayout,
  signal: AbortSignal,
  stdin?: Uint8Array,
): Promise<{ lines: string[]; exitCode: number; stderr: string; capped: boolean }> {
  const ordered = plan.mode === 'content';
  const early = new AbortController();
  const onAbort = () => early.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const parser = outputParser(layout, plan.lineNumbers, plan.needed, ordered, () => early.abort());
  let bytes = 0;
  let capped = false;
  let stderr = '';
  const stderrDecoder = new TextDecoder();
  try {
    const result = await sandbox.exec(argv, {
      // ripgrep matches --glob patterns relative to its working directory: make that the search root.
      cwd: plan.targetIsDirectory ? plan.target : posix.dirname(plan.target),
      signal: early.signal,
      maxOutputBytes: 0,
      ...(stdin ? { stdin } : {}),
      onStderr: (chunk) => {
        if (stderr.length < 65_536) stderr += stderrDecoder.decode(chunk, { stream: true });
      },
      onStdout: (chunk) => {
        bytes += chunk.byteLength;
        if (bytes > OUTPUT_CAP_BYTES) {
          capped = true;
          early.abort();
          return;
        }
        parser.push(chunk);
      },
    });
    parser.finish();
    return { lines: parser.entries, exitCode: result.exitCode, stderr, capped };
  } catch (error) {
    // Stopping early once enough lines are in (or at the output cap) is success, not an abort.
    if (isWsError(error, 'ABORTED') && !signal.aborted && (parser.stopped || capped)) {
      return { lines: parser.entries, exitCode: 0, stderr: '', capped };
    }
    throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function sortByPath(lines: string[], mode: GrepOutputMode): string[] {
  const key = (line: string) => {
    const path = mode === 'files_with_matches' ? line : line.slice(0, line.lastIndexOf(':'));
    return path.startsWith('"') ? (JSON.parse(path) as string) : path;
  };
  return lines.sort((a, b) => {
    const left = key(a);
    const right = key(b);
    return left < right ? -1 : left > right ? 1 : 0;
  });
}

async function searchWithRipgrep(
  sandbox: CompleteSandbox,
  plan: SearchPlan,
  signal: AbortSignal,
): Promise<SearchOutcome> {
  const argv = [
    'rg',
    '--no-config',
    '--hidden',
    ...VCS_DIRECTORIES.flatMap((name) => ['--glob', `!${name}`]),
    '--max-columns',
    String(GREP_MAX_COLUMNS),
  ];
  if (plan.multiline) argv.push('-U', '--multiline-dotall');
  if (plan.ignoreCase) argv.push('-i');
  if (plan.mode === 'files_with_matches') argv.push('-l');
  else if (plan.mode === 'count') argv.push('-c');
  else {
    if (plan.lineNumbers) argv.push('-n');
    if (plan.around !== undefined) argv.push('-C', String(plan.around));
    else {
      if (plan.before !== undefined) argv.push('-B', String(plan.before));
      if (plan.after !== undefined) argv.push('-A', String(plan.after));
    }
    // Content keeps ripgrep's per-file order; sorting by path makes pages stable and lets us stop early.
    argv.push('--sort', 'path');
  }
  argv.push('-e', plan.pattern);
  if (plan.type) argv.push('--type', plan.type);
  for (const glob of plan.globs) argv.push('--glob', glob);
  argv.push('--null', '--', plan.target);
  const ordered = plan.mode === 'content';
  const run = await runCollecting(sandbox, argv, plan, layoutOf(plan), signal);
  if (run.exitCode === 0 || run.exitCode === 1) {
    return { lines: ordered ? run.lines : sortByPath(run.lines, plan.mode), capped: run.capped };
  }
  if (run.exitCode === 2 && run.lines.length > 0) {
    return {
      lines: ordered ? run.lines : sortByPath(run.lines, plan.mode),
      capped: run.capped,
      warning: firstLine(run.stderr),
    };
  }
  return { error: `ripgrep error (code ${run.exitCode}): ${run.stderr.trim()}` };
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

/** Does the glob (ripgrep semantics: no `/` means "the file name, at any depth") match this file? */
function globMatcher(glob: string): (relative: string) => boolean {
  const negate = glob.startsWith('!');
  const body = negate ? glob.slice(1) : glob;
  const anchored = body.includes('/');
  const regex = globToRegExp(anchored ? body.replace(/^\//, '') : body);
  return (relative) => regex.test(anchored ? relative : posix.basename(relative)) !== negate;
}

const grepFlavours = new WeakMap<CompleteSandbox, Promise<'-P' | '-E'>>();

async function regexFlag(sandbox: CompleteSandbox, signal: AbortSignal): Promise<'-P' | '-E'> {
  let probe = grepFlavours.get(sandbox);
  if (!probe) {
    probe = sandbox
      .exec(['grep', '-P', '-q', 'x'], { stdin: 'x\n', signal })
      .then((result) => (result.exitCode === 0 ? '-P' : '-E'));
    probe.catch(() => grepFlavours.delete(sandbox));
    grepFlavours.set(sandbox, probe);
  }
  return probe;
}

/**
 * The POSIX path: `find` lists files (the same set ripgrep walks, minus .gitignore handling), the
 * glob and type filters run here, and `grep -P` (PCRE, closest to ripgrep's syntax; `-E` where grep
 * lacks it) searches the chosen files.
 */
async function searchWithGrep(
  sandbox: CompleteSandbox,
  plan: SearchPlan,
  signal: AbortSignal,
): Promise<SearchOutcome> {
  let files: string[];
  if (plan.targetIsDirectory) {
    let listed = (await listFilesWithFind(sandbox, plan.target, signal)).map((file) => file.relative);
    if (plan.type) {
      const globs = FILE_TYPES[plan.type];
      if (!globs) return { error: `ripgrep error (code 2): unrecognized file type: ${plan.type}` };
      const matchers = globs.map(globMatcher);
      listed = listed.filter((relative) => matchers.some((matches) => matches(relative)));
    }
    const includes = plan.globs.filter((glob) => !glob.startsWith('!')).map(globMatcher);
    const excludes = plan.globs.filter((glob) => glob.startsWith('!')).map(globMatcher);
    listed = listed.filter(
      (relative) =>
        (includes.length === 0 || includes.some((matches) => matches(relative))) &&
        excludes.every((keeps) => keeps(relative)),
    );
    files = listed.sort().map((relative) => posix.join(plan.target, relative));
  } else {
    files = [plan.target];
  }
  if (files.length === 0) return { lines: [], capped: false };
  const flag = await regexFlag(sandbox, signal);
  const argv = ['xargs', '-0', '-r', 'grep', flag, '--binary-files=without-match', '--null'];
  // One file searched on its own shows no file name, as with ripgrep.
  argv.push(plan.targetIsDirectory ? '-H' : '-h');
  if (plan.ignoreCase) argv.push('-i');
  // -z reads each file as one record; -o then prints only the matched text, NUL-terminated.
  if (plan.multiline) argv.push('-z', ...(plan.mode === 'content' ? ['-o'] : []));
  if (plan.mode === 'files_with_matches') argv.push('-l');
  else if (plan.mode === 'count') argv.push('-c');
  else {
    if (plan.lineNumbers) argv.push('-n');
    if (plan.around !== undefined) argv.push('-C', String(plan.around));
    else {
      if (plan.before !== undefined) argv.push('-B', String(plan.before));
      if (plan.after !== undefined) argv.push('-A', String(plan.after));
    }
  }
  argv.push('-e', plan.multiline ? `(?s)${plan.pattern}` : plan.pattern, '--');
  const list = new TextEncoder().encode(`${files.join('\0')}\0`);
  const run = await runCollecting(sandbox, argv, plan, layoutOf(plan), signal, list);
  // xargs reports 123 when any grep found nothing; errors show on stderr.
  const failed = ![0, 1, 123].includes(run.exitCode) || (run.stderr.trim() !== '' && run.lines.length === 0);
  if (failed) return { error: `grep error (code ${run.exitCode}): ${run.stderr.trim()}` };
  let lines = plan.multiline
    ? run.lines.flatMap((line) => line.split('\0')).filter((line) => line !== '')
    : run.lines;
  if (plan.mode === 'count') lines = lines.filter((line) => !line.endsWith(':0') && line !== '0');
  if (plan.mode !== 'content') lines = sortByPath(lines, plan.mode);
  lines = lines.map((line) => (Buffer.byteLength(line) > GREP_MAX_COLUMNS + 200 ? omitLongLine(line) : line));
  return run.stderr.trim() !== ''
    ? { lines, capped: run.capped, warning: firstLine(run.stderr) }
    : { lines, capped: run.capped };
}

function omitLongLine(line: string): string {
  const match = /^(.*?[:-]\d+[:-])/.exec(line);
  return `${match ? match[1] : ''}[Omitted long line]`;
}
