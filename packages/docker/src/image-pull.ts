// Getting a missing image at the opening: pulled from its registry, with progress, or one line on how
// to build it where nothing can be pulled.
import { WsError } from '@ws/core';
import { abortError } from '@ws/core/backend';
import type Docker from 'dockerode';
import { DEFAULT_DOCKER_IMAGE, missingImageHint } from './image-build.js';

/**
 * Where the default image {@link DEFAULT_DOCKER_IMAGE} is published (multi-arch, by the release
 * workflow): pulled from there and tagged under the default name when the engine lacks it.
 */
export const DEFAULT_DOCKER_IMAGE_SOURCE = 'ghcr.io/agent-ws/ws-workspace:bookworm';

/** How long a pull may go without a word from the engine before it is given up. */
export const PULL_SILENCE_MS = 120_000;

/** When the opening pulls an image the engine does not have: `missing` (default), or `never`. */
export type DockerPullPolicy = 'missing' | 'never';

/** One line of the engine's pull progress (`POST /images/create`). */
interface PullLine {
  status?: string;
  id?: string;
  error?: string;
  errorDetail?: { message?: string };
  progressDetail?: { current?: number; total?: number };
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/**
 * Pulls `reference` through the Engine API, reporting progress as lines: each layer's steps as they
 * change, and the bytes downloaded at most once a second. Gives up after {@link PULL_SILENCE_MS}
 * without a line from the engine, or when `signal` fires.
 * @throws Error the engine's own words when the pull fails (the caller says what to do instead).
 */
export async function pullImage(
  docker: Docker,
  reference: string,
  options: { signal?: AbortSignal | undefined; progress?: ((line: string) => void) | undefined } = {},
): Promise<void> {
  const silence = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, silence.signal]) : silence.signal;
  let timer = setTimeout(() => silence.abort(), PULL_SILENCE_MS);
  const heard = () => {
    clearTimeout(timer);
    timer = setTimeout(() => silence.abort(), PULL_SILENCE_MS);
  };
  const layers = new Map<string, { current: number; total: number }>();
  let lastBytes = 0;
  const say = (line: string) => options.progress?.(line);
  try {
    const stream = (await docker.pull(reference, { abortSignal: signal })) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) => {
      let failed: Error | undefined;
      const onAbort = () => {
        (stream as unknown as { destroy?: (error?: Error) => void }).destroy?.();
        reject(
          silence.signal.aborted
            ? new Error(`the engine said nothing for ${PULL_SILENCE_MS / 1000} s`)
            : (options.signal?.reason ?? new Error('aborted')),
        );
      };
      signal.addEventListener('abort', onAbort, { once: true });
      docker.modem.followProgress(
        stream,
        (error: Error | null) => {
          signal.removeEventListener('abort', onAbort);
          if (error ?? failed) reject(error ?? failed);
          else resolve();
        },
        (line: PullLine) => {
          heard();
          if (line.error || line.errorDetail?.message) {
            failed = new Error(line.errorDetail?.message ?? line.error);
            return;
          }
          const status = line.status ?? '';
          if (line.id && status === 'Downloading' && line.progressDetail?.total) {
            layers.set(line.id, {
              current: line.progressDetail.current ?? 0,
              total: line.progressDetail.total,
            });
            const now = Date.now();
            if (now - lastBytes < 1_000) return;
            lastBytes = now;
            let current = 0;
            let total = 0;
            for (const layer of layers.values()) {
              current += layer.current;
              total += layer.total;
            }
            say(`downloading ${megabytes(current)} of ${megabytes(total)} (${layers.size} layers)`);
            return;
          }
          if (status === 'Downloading' || status === 'Extracting' || status === 'Waiting') return;
          say(line.id ? `${line.id}: ${status}` : status);
        },
      );
    });
  } catch (error) {
    if (options.signal?.aborted) throw abortError(options.signal);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the engine has `image`. */
export async function hasImage(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    throw error;
  }
}

/**
 * Makes sure the engine has `image` before a container is made from it: pulled (the default image
 * from {@link DEFAULT_DOCKER_IMAGE_SOURCE}, then tagged under its own name) unless `pull` is `never`.
 * @throws WsError `BACKEND_UNAVAILABLE`, one line: the image is missing, why it could not be pulled,
 * and how to build it offline; `ABORTED` when `signal` fires.
 */
export async function obtainImage(
  docker: Docker,
  image: string,
  options: {
    pull: DockerPullPolicy;
    signal?: AbortSignal | undefined;
    progress?: ((line: string) => void) | undefined;
  },
): Promise<void> {
  if (await hasImage(docker, image)) return;
  const missing = `The image ${image} is not in the Docker engine`;
  if (options.pull === 'never')
    throw new WsError('BACKEND_UNAVAILABLE', `${missing} (pull: 'never'); ${missingImageHint(image)}`, {
      details: { image },
    });
  const source = image === DEFAULT_DOCKER_IMAGE ? DEFAULT_DOCKER_IMAGE_SOURCE : image;
  try {
    options.progress?.(`pulling ${source}`);
    await pullImage(docker, source, options);
    if (source !== image) {
      const [repo, tag] = splitReference(image);
      await docker.getImage(source).tag({ repo, tag });
    }
    options.progress?.(`pulled ${source}`);
  } catch (error) {
    if (options.signal?.aborted) throw abortError(options.signal);
    const reason = firstLine((error as Error).message ?? String(error));
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `${missing} and pulling ${source} failed (${reason}); ${missingImageHint(image)}`,
      { cause: error, details: { image, pulled: source } },
    );
  }
}

/** `name[:tag]` split at the tag's colon (a registry's port is not a tag). */
function splitReference(reference: string): [string, string] {
  const slash = reference.lastIndexOf('/');
  const colon = reference.lastIndexOf(':');
  if (colon > slash) return [reference.slice(0, colon), reference.slice(colon + 1)];
  return [reference, 'latest'];
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
