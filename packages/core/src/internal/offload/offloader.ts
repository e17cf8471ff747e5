import { posix } from 'node:path';
import { validateId } from '../../backend/ids.js';
import { abortError, throwIfAborted, WsError } from '../../contracts/errors.js';
import type { DataBlock, OffloadableToolResult } from '../../contracts/offloader.js';
import type { CompleteSandbox, FileOptions } from '../../contracts/sandbox.js';
import { LAYOUT, type LayoutPaths } from '../layout.js';
import { sha256Hex } from '../tools/text.js';
import { extensionFor, type MediaHit, recognizeMedia, WORKSPACE_URL_PREFIX } from './media.js';

/** A batch waiting for its turn to be appended. */
interface QueuedAppend {
  bytes: Buffer;
  signal: AbortSignal | undefined;
  resolve(): void;
  reject(error: unknown): void;
}

/** At most this many bytes of queued batches go in one command. */
const GROUP_BYTES = 8 * 1024 * 1024;

/**
 * Offloading, implemented once over a sandbox: media to `data/`, context to
 * `sessions/<id>/context.jsonl`, long tool results to `sessions/<id>/tool_result-<id>.txt`.
 */
export class OffloadStore {
  // Appends of this process to one file wait here, in order, while one command runs; the batches
  // that gathered meanwhile go together in the next (each whole, in the order they came). The
  // sandbox-side lock orders them with other processes.
  private readonly appendQueues = new Map<string, QueuedAppend[]>();

  constructor(
    private readonly sandbox: () => CompleteSandbox,
    private readonly paths: () => LayoutPaths,
  ) {}

  /** Stores a base64 payload once under `data/<sha256 of the base64 text><ext>` and returns its URL. */
  async storeData(data: string, mediaType: string, options: FileOptions = {}): Promise<string> {
    const name = `${sha256Hex(data)}${extensionFor(mediaType)}`;
    const path = posix.join(this.paths().dataDir, name);
    const sandbox = this.sandbox();
    if (!(await sandbox.exists(path, options))) {
      // A write replaces a file whole: a reader never sees half a payload.
      await sandbox.writeFile(path, Buffer.from(data, 'base64'), options);
    }
    return `${WORKSPACE_URL_PREFIX}${LAYOUT.dataDir}/${name}`;
  }

  /** `offloadData`: a base64 block becomes a URL block; anything else is returned as it is. */
  async offloadData(block: DataBlock, options: FileOptions = {}): Promise<DataBlock> {
    throwIfAborted(options.signal);
    if (block?.source?.type !== 'base64') return block;
    const url = await this.storeData(block.source.data, block.source.media_type, options);
    return { ...block, source: { type: 'url', url, media_type: block.source.media_type } };
  }

  /** Rewrites every recognised base64 payload inside `value` (deeply) into a workspace reference. */
  async offloadMediaIn(value: unknown, options: FileOptions = {}): Promise<unknown> {
    const hit = recognizeMedia(value);
    if (hit) return hit.replace(await this.storeData(hit.data, hit.mediaType, options));
    if (Array.isArray(value)) return Promise.all(value.map((item) => this.offloadMediaIn(item, options)));
    if (typeof value === 'object' && value !== null) {
      const entries = await Promise.all(
        Object.entries(value).map(
          async ([key, item]) => [key, await this.offloadMediaIn(item, options)] as const,
        ),
      );
      return Object.fromEntries(entries);
    }
    return value;
  }

  /** `offloadContext`: appends one JSON line per message, whole batches atomically; returns the file's path. */
  async offloadContext(
    sessionId: string,
    messages: readonly unknown[],
    options: FileOptions = {},
  ): Promise<string> {
    throwIfAborted(options.signal);
    validateId(sessionId, 'sessionId');
    if (!Array.isArray(messages)) throw new WsError('INVALID_ARGUMENT', 'messages must be an array');
    const directory = posix.join(this.paths().sessionsDir, sessionId);
    const path = posix.join(directory, 'context.jsonl');
    if (messages.length === 0) return path;
    const lines: string[] = [];
    for (const message of messages) {
      const offloaded = await this.offloadMediaIn(toJsonValue(message), options);
      lines.push(JSON.stringify(offloaded));
    }
    const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
    await new Promise<void>((resolve, reject) => {
      const queue = this.appendQueues.get(path);
      const entry = { bytes, signal: options.signal, resolve, reject };
      if (queue) queue.push(entry);
      else {
        this.appendQueues.set(path, [entry]);
        void this.drainAppends(directory, path);
      }
    });
    return path;
  }

  /**
   * Appends the batches queued for `path` until none is left: all that waited go in one command
   * (up to {@link GROUP_BYTES}), so a burst of appends costs a few commands, not one each. A batch
   * whose signal was aborted before its command began is left out (`ABORTED`: not written); one
   * sent alone carries its signal into the command; once sent with others, its outcome is the
   * command's (bounded by its time limit).
   */
  private async drainAppends(directory: string, path: string): Promise<void> {
    const queue = this.appendQueues.get(path) ?? [];
    try {
      while (queue.length > 0) {
        const group: QueuedAppend[] = [];
        let size = 0;
        while (queue.length > 0) {
          const next = queue[0]!;
          if (group.length > 0 && size + next.bytes.byteLength > GROUP_BYTES) break;
          queue.shift();
          if (next.signal?.aborted) {
            next.reject(abortError(next.signal));
            continue;
          }
          group.push(next);
          size += next.bytes.byteLength;
        }
        if (group.length === 0) continue;
        try {
          const bytes = Buffer.concat(group.map((item) => item.bytes));
          await this.appendAtomically(
            directory,
            path,
            bytes,
            group.length === 1 ? group[0]!.signal : undefined,
          );
          for (const item of group) item.resolve();
        } catch (error) {
          for (const item of group) item.reject(error);
        }
      }
    } finally {
      this.appendQueues.delete(path);
    }
  }

  /**
   * Appends `batch` so that every reader sees the file with the whole batch or without it, in one
   * command: the batch arrives on its standard input into a file of its own (and counts: an input
   * cut short by a writer that died is dropped), then, under a lock that orders writers across
   * processes, the file is rebuilt as old content + batch and renamed into place. A writer killed at
   * any point leaves the file as it was (a lock directory older than a minute is taken as abandoned).
   */
  private async appendAtomically(
    directory: string,
    path: string,
    bytes: Buffer,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const sandbox = this.sandbox();
    const tag = `${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const pending = posix.join(directory, `.append-${tag}`);
    const result = await sandbox.exec(
      [
        'sh',
        '-c',
        APPEND_SCRIPT,
        'sh',
        path,
        pending,
        `${path}.lock`,
        `${path}.tmp-${tag}`,
        String(bytes.byteLength),
      ],
      {
        cwd: '/',
        stdin: bytes,
        timeoutMs: 120_000,
        ...(signal ? { signal } : {}),
      },
    );
    if (result.exitCode !== 0) {
      await sandbox.remove(pending, { force: true }).catch(() => {});
      const reason = result.timedOut
        ? 'timed out'
        : result.exitCode === 75
          ? 'the file stayed locked'
          : result.exitCode === 76
            ? 'the batch arrived incomplete'
            : result.stderrText.trim() || `exit ${result.exitCode}`;
      throw new WsError(
        result.exitCode === 75 ? 'CONFLICT' : 'BACKEND_ERROR',
        `Appending to ${path} failed: ${reason}`,
        { details: { path } },
      );
    }
  }

  /** `offloadToolResult`: writes the result as flat text (media as `<data …/>` placeholders); returns its path. */
  async offloadToolResult(
    sessionId: string,
    result: OffloadableToolResult,
    options: FileOptions = {},
  ): Promise<string> {
    throwIfAborted(options.signal);
    validateId(sessionId, 'sessionId');
    if (typeof result !== 'object' || result === null)
      throw new WsError('INVALID_ARGUMENT', 'result must be an object with an id and an output');
    const id = validateId(result.id, 'tool result id');
    const text = await this.toolResultText(result.output, options);
    const sandbox = this.sandbox();
    const directory = posix.join(this.paths().sessionsDir, sessionId);
    for (let attempt = 0; ; attempt++) {
      const name = attempt === 0 ? `tool_result-${id}.txt` : `tool_result-${id}(${attempt}).txt`;
      const path = posix.join(directory, name);
      if (await sandbox.exists(path, options)) continue;
      await sandbox.writeFile(path, text, options);
      return path;
    }
  }

  private async toolResultText(
    output: OffloadableToolResult['output'],
    options: FileOptions,
  ): Promise<string> {
    if (typeof output === 'string') return output;
    if (!Array.isArray(output))
      throw new WsError('INVALID_ARGUMENT', 'A tool result output must be a string or a list of blocks');
    let text = '';
    for (const block of output) {
      const media = recognizeMedia(block);
      if (media) {
        text += placeholder(await this.storeData(media.data, media.mediaType, options), media);
        continue;
      }
      const node = block as Record<string, unknown>;
      if (node?.type === 'text' && typeof node.text === 'string') {
        text += node.text;
      } else if (node?.type === 'data' && typeof node.source === 'object' && node.source !== null) {
        const source = node.source as Record<string, unknown>;
        if (source.type === 'url' && typeof source.url === 'string') {
          text += placeholder(source.url, {
            name: typeof node.name === 'string' ? node.name : undefined,
            mediaType: String(source.media_type ?? ''),
          });
        }
      }
    }
    return text;
  }
}

function placeholder(url: string, media: Pick<MediaHit, 'name' | 'mediaType'>): string {
  const attribute = (value: string) => value.replaceAll("'", '&#39;');
  return `<data url='${attribute(url)}' name='${attribute(media.name ?? '')}' media_type='${attribute(media.mediaType)}'/>`;
}

/** A message as plain JSON (class instances and Dates serialised as JSON would). */
function toJsonValue(message: unknown): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(message);
  } catch (error) {
    // A cycle, a BigInt, or a toJSON that throws.
    throw new WsError(
      'INVALID_ARGUMENT',
      `A message must be serialisable as JSON: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  if (text === undefined) throw new WsError('INVALID_ARGUMENT', 'A message must be serialisable as JSON');
  return JSON.parse(text);
}

/** Resolves a `workspace:///…` URL to the path it names inside the sandbox. */
export function resolveWorkspaceUrl(url: string, workdir: string): string {
  if (typeof url !== 'string' || !url.startsWith(WORKSPACE_URL_PREFIX)) {
    throw new WsError('INVALID_ARGUMENT', `Not a workspace URL: ${String(url)}`);
  }
  let relative: string;
  try {
    relative = decodeURIComponent(url.slice(WORKSPACE_URL_PREFIX.length).split(/[?#]/)[0] ?? '');
  } catch (error) {
    throw new WsError('INVALID_ARGUMENT', `Malformed workspace URL: ${url}`, { cause: error });
  }
  const resolved = posix.resolve(workdir, relative);
  if (
    relative === '' ||
    relative.includes('\0') ||
    (resolved !== workdir && !resolved.startsWith(`${workdir}/`))
  ) {
    throw new WsError('INVALID_ARGUMENT', `The workspace URL ${url} points outside the workspace`);
  }
  return resolved;
}

// $1 file, $2 pending batch, $3 lock directory (where flock is missing), $4 temporary file, $5 the
// batch's length in bytes; the batch comes on stdin. Exit 76: the batch arrived shorter or longer
// (its writer died while sending it); exit 75: the lock never came free. With flock, the lock is the
// kernel's, on the session folder: it is released the moment its holder dies, so a killed writer
// never leaves a stale lock behind. Without it, a lock directory older than a minute is taken as
// abandoned.
const APPEND_SCRIPT = `
file=$1 pending=$2 lock=$3 tmp=$4 length=$5
trap 'rm -f "$pending" "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
mkdir -p -- "$(dirname -- "$file")" || exit 1
cat > "$pending" || exit 1
size=$(wc -c < "$pending") || exit 1
[ $size -eq "$length" ] || exit 76
if command -v flock >/dev/null 2>&1; then
  exec 9<"$(dirname -- "$file")" || exit 1
  flock -w 60 9 || exit 75
else
  tries=0
  until mkdir "$lock" 2>/dev/null; do
    if [ -n "$(find "$lock" -maxdepth 0 -mmin +1 2>/dev/null)" ]; then rmdir "$lock" 2>/dev/null; continue; fi
    tries=$((tries + 1))
    [ "$tries" -gt 2400 ] && exit 75
    sleep 0.025
  done
  trap 'rm -f "$pending" "$tmp"; rmdir "$lock" 2>/dev/null' EXIT
fi
if [ -f "$file" ]; then cat "$file" "$pending" > "$tmp"; else cat "$pending" > "$tmp"; fi || exit 1
mv -f "$tmp" "$file" || exit 1
`;
