import { posix } from 'node:path';
import { encodeUtf8 } from '../../backend/exec-result.js';
import { throwIfAborted } from '../../contracts/errors.js';
import type { Tool, ToolCallOptions, ToolResult } from '../../contracts/tool.js';
import { checkInput, errorResult, failureResult, type ToolEnvironment, textResult } from './common.js';
import { unifiedDiff } from './diff.js';
import { capDiff, loadForChange } from './file-change.js';
import { decodeExact, sha256Hex } from './text.js';

export interface WriteInput {
  file_path: string;
  content: string;
}

const DESCRIPTION = `Writes a file in the workspace, replacing it if it exists.

- \`file_path\` must be an absolute path; missing parent directories are created.
- An existing file must be read with Read first, and must not have changed since.
- Prefer Edit for changing part of an existing file; use Write for new files and complete rewrites.
- Do not create documentation files unless asked to.`;

/** The `Write` tool: whole-file writes, guarded by the read-before-write rule, with a unified diff. */
export function createWriteTool(environment: ToolEnvironment): Tool<WriteInput> {
  const inputSchema = {
    type: 'object',
    properties: {
      file_path: { type: 'string', description: 'Absolute path of the file to write.' },
      content: { type: 'string', description: 'The complete new content of the file.' },
    },
    required: ['file_path', 'content'],
    additionalProperties: false,
  } as const;
  return {
    name: 'Write',
    description: DESCRIPTION,
    inputSchema,
    annotations: {
      readOnlyHint: false,
      concurrencySafe: false,
      destructiveHint: true,
      idempotentHint: true,
      title: 'Write a file',
    },
    async call(input: WriteInput, options: ToolCallOptions = {}): Promise<ToolResult> {
      throwIfAborted(options.signal);
      const invalid = checkInput(inputSchema, input);
      if (invalid) return errorResult(invalid);
      const path = input.file_path;
      if (!posix.isAbsolute(path))
        return errorResult(`Error: file_path must be an absolute path, got: ${path}`);
      try {
        const sandbox = environment.sandbox();
        const current = await loadForChange(environment, sandbox, path, options, {
          unread: `Error: File ${path} exists but has not been read yet. You must read the file first before writing to it.`,
        });
        if (current.kind === 'refused') return current.result;
        const bytes = encodeUtf8(input.content);
        await sandbox.writeFile(path, bytes, options.signal ? { signal: options.signal } : {});
        environment.readCache.remember(path, { hash: sha256Hex(bytes), size: bytes.byteLength });
        const previous = current.kind === 'file' ? (decodeExact(current.bytes) ?? '') : '';
        const diff = unifiedDiff(previous, input.content, {
          fromFile: current.kind === 'file' ? `a/${path}` : '/dev/null',
          toFile: `b/${path}`,
        });
        const lineCount = input.content.split('\n').length;
        return textResult(`The file ${path} has been written successfully (${lineCount} lines).`, {
          ...capDiff(diff),
          file_path: path,
          occurrences: 1,
          created: current.kind === 'missing',
        });
      } catch (error) {
        return failureResult(error, `Error: writing ${path} failed: `);
      }
    },
  };
}
