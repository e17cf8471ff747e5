import { posix } from 'node:path';
import { encodeUtf8 } from '../../backend/exec-result.js';
import { throwIfAborted } from '../../contracts/errors.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import { checkInput, errorResult, failureResult, type ToolEnvironment, textResult } from './common.js';
import { type ChangeBlock, unifiedDiff } from './diff.js';
import { capDiff, loadForChange } from './file-change.js';
import { decodeExact, looksBinary, sha256Hex } from './text.js';

export interface EditInput {
  file_path: string;
  old_string: string;
  new_string: string;
  replace_all?: boolean;
}

const DESCRIPTION = `Replaces text in a file in the workspace.

- \`file_path\` must be an absolute path, and the file must have been read with Read first (and not have changed since).
- \`old_string\` must match the file exactly, whitespace and indentation included, without the line-number prefix Read adds.
- The edit fails when \`old_string\` is not found, or is found more than once without \`replace_all\`: include more surrounding lines to make it unique, or set \`replace_all\` to change every occurrence (for renaming a variable, say).
- Line endings are kept: in a file with CRLF line endings, write \`old_string\` and \`new_string\` with plain newlines.`;

/** The `Edit` tool: exact string replacement guarded by the read-before-edit rule, with a unified diff. */
export function createEditTool(environment: ToolEnvironment): Tool<EditInput> {
  const inputSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Absolute path of the file to change.' },
      old_string: { type: 'string', description: 'The exact text to replace.' },
      new_string: {
        type: 'string',
        description: 'The text to put in its place (must differ from old_string).',
      },
      replace_all: {
        type: 'boolean',
        description: 'Replace every occurrence of old_string.',
        default: false,
      },
    },
    required: ['file_path', 'old_string', 'new_string'],
    additionalProperties: false,
  } as const;
  return {
    name: 'Edit',
    description: DESCRIPTION,
    inputSchema,
    annotations: { readOnlyHint: false, concurrencySafe: false, destructiveHint: true, title: 'Edit a file' },
    async call(input: EditInput, options: ToolCallOptions = {}): Promise<ToolResult> {
      throwIfAborted(options.signal);
      const invalid = checkInput(inputSchema, input);
      if (invalid) return errorResult(invalid);
      const path = input.file_path;
      if (!posix.isAbsolute(path))
        return errorResult(`Error: file_path must be an absolute path, got: ${path}`);
      if (input.old_string === input.new_string)
        return errorResult('Error: old_string and new_string must be different.');
      if (input.old_string === '')
        return errorResult('Error: old_string must not be empty; use Write to create or overwrite a file.');
      try {
        const sandbox = environment.sandbox();
        const current = await loadForChange(environment, sandbox, path, options, {
          unread: 'Error: To edit a file, you must first read it using the Read tool.',
          missing: `Error: File not found: ${path}`,
        });
        if (current.kind === 'refused') return current.result;
        if (current.kind === 'missing') return errorResult(`Error: File not found: ${path}`);
        const text = looksBinary(current.bytes) ? undefined : decodeExact(current.bytes);
        if (text === undefined)
          return errorResult(`Error: ${path} is not UTF-8 text; Edit would corrupt it.`);
        const crlf = usesCrlf(text);
        const oldString = crlf ? toCrlf(input.old_string) : input.old_string;
        const newString = crlf ? toCrlf(input.new_string) : input.new_string;
        const positions = findAll(text, oldString);
        if (positions.length === 0) return errorResult(`Error: old_string not found in ${path}`);
        if (positions.length > 1 && !input.replace_all) {
          return errorResult(
            `Error: old_string appears ${positions.length} times in ${path}. Set replace_all=true to replace all occurrences, or make old_string more specific.`,
          );
        }
        const replaced = replaceAt(text, positions, oldString, newString);
        const bytes = encodeUtf8(replaced.text);
        await sandbox.writeFile(path, bytes, options.signal ? { signal: options.signal } : {});
        environment.readCache.remember(path, { hash: sha256Hex(bytes), size: bytes.byteLength });
        const diff = unifiedDiff(text, replaced.text, {
          fromFile: `a/${path}`,
          toFile: `b/${path}`,
          blocks: replaced.blocks,
        });
        const count = positions.length;
        const message =
          count === 1
            ? `Successfully replaced 1 occurrence in ${path}`
            : `Successfully replaced all ${count} occurrences in ${path}`;
        return textResult(message, { ...capDiff(diff), file_path: path, occurrences: count });
      } catch (error) {
        return failureResult(error, `Error: editing ${path} failed: `);
      }
    },
  };
}

/** True when every line break of the text is CRLF (and there is at least one). */
function usesCrlf(text: string): boolean {
  let crlf = false;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) {
    if (index === 0 || text[index - 1] !== '\r') return false;
    crlf = true;
  }
  return crlf;
}

function toCrlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

function findAll(text: string, needle: string): number[] {
  const positions: number[] = [];
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + needle.length))
    positions.push(index);
  return positions;
}

/**
 * Replaces `needle` at each position and records, for the diff, which whole lines each replacement
 * touched in the old and the new text. A region runs from the start of the line where the match
 * begins to the end of the line where it ends (in whichever text ends mid-line), so the lines after
 * it are identical on both sides.
 */
function replaceAt(
  text: string,
  positions: number[],
  needle: string,
  replacement: string,
): { text: string; blocks: ChangeBlock[] } {
  const parts: string[] = [];
  const blocks: ChangeBlock[] = [];
  let cursor = 0;
  let oldLine = 0;
  let lineShift = 0;
  // Whether the new text, as built so far, ends at the start of a line.
  let newAtLineStart = true;
  for (const position of positions) {
    const between = text.slice(cursor, position);
    if (between.length > 0) newAtLineStart = between.endsWith('\n');
    parts.push(between, replacement);
    oldLine += countBreaks(text, cursor, position);
    const oldEnd = position + needle.length;
    const oldAtLineStart = position === 0 || text[position - 1] === '\n';
    const oldEndsLine = needle.endsWith('\n');
    const newEndsLine = replacement.length > 0 ? replacement.endsWith('\n') : newAtLineStart;
    let extension = '';
    if (!(oldEndsLine && newEndsLine)) {
      const next = text.indexOf('\n', oldEnd);
      extension = text.slice(oldEnd, next === -1 ? text.length : next + 1);
    }
    // Only whether a line's start precedes the match matters for counting lines, not its content.
    const oldLines = lineCount(`${oldAtLineStart ? '' : 'x'}${needle}${extension}`);
    const newLines = lineCount(`${newAtLineStart ? '' : 'x'}${replacement}${extension}`);
    const oldStart = oldLine;
    const newStart = oldLine + lineShift;
    const previous = blocks[blocks.length - 1];
    if (previous && (oldStart < previous.oldEnd || newStart < previous.newEnd)) {
      previous.oldEnd = Math.max(previous.oldEnd, oldStart + oldLines);
      previous.newEnd = Math.max(previous.newEnd, newStart + newLines);
    } else {
      blocks.push({ oldStart, oldEnd: oldStart + oldLines, newStart, newEnd: newStart + newLines });
    }
    if (replacement.length > 0) newAtLineStart = replacement.endsWith('\n');
    const needleBreaks = countBreaks(needle, 0, needle.length);
    oldLine += needleBreaks;
    lineShift += countBreaks(replacement, 0, replacement.length) - needleBreaks;
    cursor = oldEnd;
  }
  parts.push(text.slice(cursor));
  return { text: parts.join(''), blocks };
}

/** Lines a region spans when it starts at a line start: its breaks, plus a final partial line. */
function lineCount(region: string): number {
  const breaks = countBreaks(region, 0, region.length);
  return region.length === 0 || region.endsWith('\n') ? breaks : breaks + 1;
}

function countBreaks(text: string, from: number, to: number): number {
  let count = 0;
  for (
    let index = text.indexOf('\n', from);
    index !== -1 && index < to;
    index = text.indexOf('\n', index + 1)
  )
    count++;
  return count;
}
