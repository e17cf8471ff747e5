import { isWsError } from '../../contracts/errors.js';
import type { CompleteSandbox } from '../../contracts/sandbox.js';
import type { ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import { errorResult, type ToolEnvironment } from './common.js';
import { MAX_EDITABLE_FILE_BYTES } from './read-tool.js';
import { sha256Hex } from './text.js';

/** The largest diff kept in a result's metadata; a longer one is cut and flagged. */
export const MAX_DIFF_CHARS = 1024 * 1024;

/** What Write and Edit found at a path before changing it. */
export type CurrentFile =
  | { kind: 'missing' }
  | { kind: 'file'; bytes: Uint8Array; hash: string }
  | { kind: 'refused'; result: ToolResult };

/**
 * Loads the file Write or Edit is about to change and enforces the read-before-change rule: an
 * existing file must have been read by this agent, and must not have changed since (content hash,
 * taken through the sandbox).
 */
export async function loadForChange(
  environment: ToolEnvironment,
  sandbox: CompleteSandbox,
  path: string,
  options: ToolCallOptions,
  messages: { unread: string; missing?: string },
): Promise<CurrentFile> {
  const signal = options.signal ? { signal: options.signal } : {};
  let size: number;
  try {
    const info = await sandbox.stat(path, signal);
    if (info.type === 'directory')
      return { kind: 'refused', result: errorResult(`Error: Path is a directory, not a file: ${path}`) };
    size = info.size;
  } catch (error) {
    if (isWsError(error, 'NOT_FOUND')) {
      return messages.missing
        ? { kind: 'refused', result: errorResult(messages.missing) }
        : { kind: 'missing' };
    }
    throw error;
  }
  if (size > MAX_EDITABLE_FILE_BYTES) {
    return {
      kind: 'refused',
      result: errorResult(
        `Error: ${path} is ${size} bytes; Write and Edit change files of up to ${MAX_EDITABLE_FILE_BYTES} bytes.`,
      ),
    };
  }
  const bytes = await sandbox.readFile(path, signal);
  const hash = sha256Hex(bytes);
  const state = environment.readCache.check(path, hash);
  if (state === 'unread') return { kind: 'refused', result: errorResult(messages.unread) };
  if (state === 'stale')
    return {
      kind: 'refused',
      result: errorResult(`${messages.unread} The file changed since it was last read.`),
    };
  return { kind: 'file', bytes, hash };
}

/** Caps a diff for metadata. */
export function capDiff(diff: string): { diff: string; diffTruncated?: true } {
  if (diff.length <= MAX_DIFF_CHARS) return { diff };
  return { diff: `${diff.slice(0, MAX_DIFF_CHARS)}\n... (diff truncated)\n`, diffTruncated: true };
}
