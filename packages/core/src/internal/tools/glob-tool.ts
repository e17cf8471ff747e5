import { posix } from 'node:path';
import { isWsError, throwIfAborted } from '../../contracts/errors.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import { checkInput, errorResult, failureResult, type ToolEnvironment, textResult } from './common.js';
import { displayPath } from './display-path.js';
import { type ListedFile, listFilesWithFind, listFilesWithRipgrep } from './file-listing.js';
import { compileGlob, filterYielding, type GlobMatcher, hasGlobSyntax } from './glob-pattern.js';

/** The most paths one Glob call returns (the newest ones); the rest are counted. */
export const GLOB_MAX_RESULTS = 1_000;
/** Glob's time limit, in milliseconds. */
export const GLOB_TIMEOUT_MS = 30_000;

export interface GlobInput {
  pattern: string;
  path?: string;
}

const DESCRIPTION = `Finds files by name pattern in the workspace, newest first.

- Patterns: \`*\` and \`?\` match within one path segment, \`**\` matches any number of directories, \`[abc]\` and \`[a-z]\` match one character, \`{ts,tsx}\` matches alternatives. Examples: \`**/*.ts\`, \`src/**/*.{ts,tsx}\`, \`*.md\`.
- The pattern is matched against paths relative to \`path\` (default: the workspace directory; a relative \`path\` is taken from there). \`*.md\` matches only at the top; use \`**/*.md\` to search every level.
- Hidden files are included; version-control directories (.git and the like) are skipped; symbolic links are not followed.
- Returns absolute paths, most recently modified first, at most ${GLOB_MAX_RESULTS}.`;

/** Splits an absolute pattern into the directory before its first glob segment and the rest. */
function splitAbsolutePattern(pattern: string): { base: string; rest: string } {
  const segments = pattern.split('/');
  let index = 1;
  while (index < segments.length - 1 && !hasGlobSyntax(segments[index]!)) index++;
  return { base: segments.slice(0, index).join('/') || '/', rest: segments.slice(index).join('/') };
}

function newestFirst(a: ListedFile, b: ListedFile): number {
  if (a.mtimeMs !== b.mtimeMs) return b.mtimeMs - a.mtimeMs;
  return a.relative < b.relative ? -1 : a.relative > b.relative ? 1 : 0;
}

/** The `Glob` tool: pattern matching over file paths inside the sandbox, with ripgrep or `find`. */
export function createGlobTool(environment: ToolEnvironment): Tool<GlobInput> {
  const inputSchema = {
    type: 'object',
    properties: {
      pattern: { type: 'string', description: 'The glob pattern, such as "**/*.ts".' },
      path: { type: 'string', description: 'Directory to search in (default: the workspace directory).' },
    },
    required: ['pattern'],
    additionalProperties: false,
  } as const;
  return {
    name: 'Glob',
    description: DESCRIPTION,
    inputSchema,
    annotations: { readOnlyHint: true, concurrencySafe: true, title: 'Find files by pattern' },
    async call(input: GlobInput, options: ToolCallOptions = {}): Promise<ToolResult> {
      throwIfAborted(options.signal);
      const invalid = checkInput(inputSchema, input);
      if (invalid) return errorResult(invalid);
      let base = posix.resolve(environment.workdir, input.path ?? '.');
      let pattern = input.pattern.replace(/^(\.\/)+/, '');
      if (pattern.startsWith('/')) {
        const split = splitAbsolutePattern(posix.normalize(pattern));
        base = split.base;
        pattern = split.rest;
      }
      if (pattern === '') return errorResult('Error: the pattern is empty.');
      let matcher: GlobMatcher;
      try {
        matcher = compileGlob(pattern);
      } catch (error) {
        return failureResult(error, 'Error: ');
      }
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), GLOB_TIMEOUT_MS);
      const onAbort = () => controller.abort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        const sandbox = environment.sandbox();
        try {
          const info = await sandbox.stat(base, { signal: controller.signal });
          if (info.type !== 'directory') return errorResult(`Directory not found: ${base}`);
        } catch (error) {
          if (isWsError(error, 'NOT_FOUND') || isWsError(error, 'NOT_A_DIRECTORY'))
            return errorResult(`Directory not found: ${base}`);
          throw error;
        }
        let listed: ListedFile[];
        if (await environment.search.useRipgrep(sandbox, controller.signal)) {
          // ripgrep's globs have the same syntax; a leading "/" anchors the pattern at the base.
          const { gnuStat } = await environment.search.programs(sandbox, controller.signal);
          listed = await listFilesWithRipgrep(sandbox, base, `/${pattern}`, gnuStat, controller.signal);
        } else {
          listed = await listFilesWithFind(sandbox, base, controller.signal);
        }
        const files = await filterYielding(listed, (file) => matcher.test(file.relative), controller.signal);
        if (files.length === 0)
          return textResult(`No files found matching pattern: ${input.pattern}`, { count: 0 });
        files.sort(newestFirst);
        const shown = files
          .slice(0, GLOB_MAX_RESULTS)
          .map((file) => displayPath(posix.join(base, file.relative)));
        let text = shown.join('\n');
        if (files.length > shown.length) {
          text += `\n\n[Showing the ${shown.length} most recently modified of ${files.length} matching files; narrow the pattern or path to see the rest.]`;
        }
        return textResult(text, { count: files.length, truncated: files.length > shown.length });
      } catch (error) {
        if (controller.signal.aborted && !options.signal?.aborted) {
          return errorResult(
            `Glob timed out after ${GLOB_TIMEOUT_MS / 1000} seconds. Try a more specific path or pattern.`,
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
