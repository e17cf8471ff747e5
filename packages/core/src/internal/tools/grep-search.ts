import { posix } from 'node:path';
import { isWsError } from '../../contracts/errors.js';
import type { CompleteSandbox } from '../../contracts/sandbox.js';
import { displayPath } from './display-path.js';
import { listFilesWithFind, VCS_DIRECTORIES } from './file-listing.js';
import { FILE_TYPES } from './file-types.js';
import { compileGlob, filterYielding } from './glob-pattern.js';

/** Grep's search engines: ripgrep, and `find` + `grep` where ripgrep is missing. */

export type GrepOutputMode = 'content' | 'files_with_matches' | 'count';

/** Lines longer than this many bytes are replaced by a note. */
export const GREP_MAX_COLUMNS = 500;
// Output kept of one search; head_limit 0 ("everything") stops here.
export const OUTPUT_CAP_BYTES = 64 * 1024 * 1024;

/** What one Grep call searches for, resolved from its input. */
export interface SearchPlan {
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

export type SearchOutcome = { lines: string[]; capped: boolean; warning?: string } | { error: string };

/** How a search program's output is laid out (all with `--null` after file names). */
type OutputLayout = 'files' | 'records' | 'plain';

/** The output-mode and context flags, spelt the same by ripgrep and grep. */
function outputFlags(plan: SearchPlan): string[] {
  if (plan.mode === 'files_with_matches') return ['-l'];
  if (plan.mode === 'count') return ['-c'];
  const flags = plan.lineNumbers ? ['-n'] : [];
  if (plan.around !== undefined) flags.push('-C', String(plan.around));
  else {
    if (plan.before !== undefined) flags.push('-B', String(plan.before));
    if (plan.after !== undefined) flags.push('-A', String(plan.after));
  }
  return flags;
}

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

export async function searchWithRipgrep(
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
  argv.push(...outputFlags(plan));
  // Content keeps ripgrep's per-file order; sorting by path makes pages stable and lets us stop early.
  if (plan.mode === 'content') argv.push('--sort', 'path');
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
  const matcher = compileGlob(anchored ? body.replace(/^\//, '') : body);
  return (relative) => matcher.test(anchored ? relative : posix.basename(relative)) !== negate;
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
export async function searchWithGrep(
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
      listed = await filterYielding(
        listed,
        (relative) => matchers.some((matches) => matches(relative)),
        signal,
      );
    }
    const includes = plan.globs.filter((glob) => !glob.startsWith('!')).map(globMatcher);
    const excludes = plan.globs.filter((glob) => glob.startsWith('!')).map(globMatcher);
    listed = await filterYielding(
      listed,
      (relative) =>
        (includes.length === 0 || includes.some((matches) => matches(relative))) &&
        excludes.every((keeps) => keeps(relative)),
      signal,
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
  argv.push(...outputFlags(plan));
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
