import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { isWsError, WsError } from '@ws/core';
import { abortError, throwIfAborted } from '@ws/core/backend';
import Docker from 'dockerode';
import { buildFromDebian } from './image-debian.js';
import { DEFAULT_DOCKER_IMAGE_SOURCE, pullImage } from './image-pull.js';

/** The image used when none is given: get it with `npx ws-docker-image` or `DockerWorkspace.ensureImage()`. */
export const DEFAULT_DOCKER_IMAGE = 'ws-workspace:bookworm';

/**
 * Where the workspace image comes from: `debian`, a root filesystem made by debootstrap from Debian's
 * package mirror (no registry; needs root, debootstrap and the docker CLI); `dockerfile`, a
 * `docker build` of the shipped Dockerfile (`FROM node:20-bookworm-slim`: needs a registry).
 */
export type DockerImageSource = 'debian' | 'dockerfile';

/**
 * The shipped folder holding `build-image.sh` and `Dockerfile`: `image/` in the package, beside
 * `src/` and `dist/`, so it is found from a source checkout and from `node_modules` alike.
 */
export const DOCKER_IMAGE_DIR = fileURLToPath(new URL('../image/', import.meta.url));

/** Options of {@link buildDockerImage}. */
export interface BuildDockerImageOptions {
  /** The tag to build; `<tag>-bare` (no node, no ripgrep) is built too. Default: {@link DEFAULT_DOCKER_IMAGE}. */
  tag?: string;
  /** Where the image comes from. Default: `debian` (no registry). */
  from?: DockerImageSource;
  /** The Debian mirror URL. Default: `http://deb.debian.org/debian` (for `dockerfile`: the base image's own). */
  mirror?: string;
  /**
   * The image the Dockerfile starts `FROM` (AgentScope's `base_image`): a Debian or Ubuntu image,
   * with node 18 or newer for the gateway; apt adds ripgrep, tar, bash and procps when it lacks them.
   * Implies `from: 'dockerfile'` (with `from: 'debian'` it is refused: debootstrap makes its own root
   * filesystem). Default: `node:<nodeVersion>-bookworm-slim`.
   */
  base?: string;
  /**
   * The node the image gets (AgentScope's `node_version`): a major (`'20'`) or major.minor. From the
   * Dockerfile: the default base becomes `node:<nodeVersion>-bookworm-slim`, and a given `base` must
   * have that node (the build fails otherwise). From debian (no registry): this host's node when it is
   * that version, else Debian bookworm's nodejs when that is 18; anything else is refused with
   * `INVALID_ARGUMENT` naming what the debian build can provide. Default: the base's node (dockerfile,
   * node 20), this host's node (debian).
   */
  nodeVersion?: string;
  /** Rebuild even when an image with the same fingerprint exists. */
  force?: boolean;
  /** Called with each progress line (`[12s] …`: elapsed seconds, then the step), as the build goes. */
  onProgress?: (line: string) => void;
  /** Stops the build (its processes and temporary files included); the call then throws `ABORTED`. */
  signal?: AbortSignal;
  /**
   * The engine to check and, for `dockerfile`, to build with. Default: the local engine. The `debian`
   * build drives the docker CLI, so it reaches the engine of `DOCKER_HOST` (the local one by default).
   */
  client?: Docker | Docker.DockerOptions;
}

/** What {@link buildDockerImage} and `DockerWorkspace.ensureImage()` leave in the engine. */
export interface DockerImageResult {
  /** The image's tag. */
  image: string;
  /** Whether this call built it (false: it was there already, up to date, or pulled). */
  built: boolean;
  /** True when this call pulled it from its registry instead of building it. */
  pulled?: boolean;
  /** The image's size in bytes, as the engine reports it. */
  sizeBytes: number;
  /** Seconds the call took. */
  seconds: number;
}

/** Options of `DockerWorkspace.ensureImage()`. */
export interface EnsureDockerImageOptions {
  /** The image to make sure of. Default: {@link DEFAULT_DOCKER_IMAGE}. */
  image?: string;
  /** Where to build it from when it is missing. Default: `debian` (no registry), `dockerfile` with `base`. */
  from?: DockerImageSource;
  /** The Dockerfile's base image, when it builds (see {@link BuildDockerImageOptions.base}). */
  base?: string;
  /** The node the image gets, when it builds (see {@link BuildDockerImageOptions.nodeVersion}). */
  nodeVersion?: string;
  /** Called with each progress line of a build (never when the image is already there). */
  onProgress?: (line: string) => void;
  /** Stops a build; the call then throws `ABORTED`. */
  signal?: AbortSignal;
  /** An existing dockerode client, or options for a new one. Default: the local engine. */
  client?: Docker | Docker.DockerOptions;
}

const ENSURE_KEYS = new Set(['image', 'from', 'base', 'nodeVersion', 'onProgress', 'signal', 'client']);
const FINGERPRINT_LABEL = 'ws.image.fingerprint';
const HEARTBEAT_MS = 10_000;

/** The command that builds `image`, as a missing-image error should name it. */
export function imageCommand(image: string): string {
  if (image === DEFAULT_DOCKER_IMAGE) return 'npx ws-docker-image';
  return `npx ws-docker-image --tag ${/^[\w.:/@-]+$/.test(image) ? image : `'${image.replaceAll("'", `'\\''`)}'`}`;
}

/** How to get a missing `image`, for error messages: the exact command, and the API call. */
export function missingImageHint(image: string): string {
  if (image === DEFAULT_DOCKER_IMAGE)
    return 'build it with `npx ws-docker-image` (or `await DockerWorkspace.ensureImage()`)';
  return `docker pull it, or build the workspace image under that name with \`${imageCommand(image)}\` (or \`await DockerWorkspace.ensureImage({ image: ${JSON.stringify(image)} })\`)`;
}

/**
 * Builds the workspace image (and `<tag>-bare`) unless an image with the same fingerprint exists:
 * `debian` runs the shipped `image/build-image.sh` (debootstrap), `dockerfile` builds the shipped
 * `image/Dockerfile` through the Engine API. What `npx ws-docker-image` runs.
 * @throws WsError `INVALID_ARGUMENT` for a bad option; `BACKEND_UNAVAILABLE` when the engine, the
 * docker CLI, debootstrap or root is missing; `BACKEND_ERROR` when the build fails; `ABORTED`.
 */
export async function buildDockerImage(options: BuildDockerImageOptions = {}): Promise<DockerImageResult> {
  const tag = options.tag ?? DEFAULT_DOCKER_IMAGE;
  const from = options.from ?? (options.base !== undefined ? 'dockerfile' : 'debian');
  checkTag(tag);
  checkSource(from);
  checkNodeVersion(options.nodeVersion);
  if (options.base !== undefined) {
    if (typeof options.base !== 'string' || !/^[A-Za-z0-9][\w.:/@-]*$/.test(options.base))
      throw new WsError(
        'INVALID_ARGUMENT',
        `base must be an image reference, not ${JSON.stringify(options.base)}`,
        {
          details: { option: 'base' },
        },
      );
    if (from === 'debian')
      throw new WsError(
        'INVALID_ARGUMENT',
        `base applies to the Dockerfile build (from: 'dockerfile'); the debian build makes its own root filesystem with debootstrap`,
        { details: { option: 'base' } },
      );
  }
  const nodeBinary = from === 'debian' ? debianNode(options.nodeVersion) : undefined;
  if (options.mirror !== undefined && !/^[a-z][a-z0-9+.-]*:[^\s|'"\\]+$/i.test(options.mirror))
    throw new WsError('INVALID_ARGUMENT', `mirror must be a URL, not ${JSON.stringify(options.mirror)}`);
  throwIfAborted(options.signal);
  const docker = dockerClient(options.client);
  const started = Date.now();
  await ping(docker);
  const before = await inspectImage(docker, tag);
  const progress = new Progress(started, options.onProgress);
  try {
    if (from === 'dockerfile') await buildFromDockerfile(docker, tag, options, progress);
    else await buildFromDebian(join(DOCKER_IMAGE_DIR, 'build-image.sh'), tag, options, progress, nodeBinary);
  } finally {
    progress.stop();
  }
  const after = await inspectImage(docker, tag);
  if (after === undefined)
    throw new WsError(
      'BACKEND_ERROR',
      `The build of ${tag} finished but the engine has no such image (the debian build goes to the engine of the docker CLI, DOCKER_HOST)`,
      { details: { image: tag, from } },
    );
  return {
    image: tag,
    built: after.Id !== before?.Id,
    sizeBytes: after.Size,
    seconds: Math.round((Date.now() - started) / 1000),
  };
}

/** `DockerWorkspace.ensureImage()`: see there. */
export async function ensureDockerImage(options: EnsureDockerImageOptions = {}): Promise<DockerImageResult> {
  if (typeof options !== 'object' || options === null)
    throw new WsError('INVALID_ARGUMENT', 'DockerWorkspace.ensureImage takes an options object');
  for (const key of Object.keys(options))
    if (!ENSURE_KEYS.has(key))
      throw new WsError(
        'INVALID_ARGUMENT',
        `DockerWorkspace.ensureImage has no option ${JSON.stringify(key)}`,
        {
          details: { option: key },
        },
      );
  const image = options.image ?? DEFAULT_DOCKER_IMAGE;
  checkTag(image);
  checkSource(options.from);
  throwIfAborted(options.signal);
  const docker = dockerClient(options.client);
  const present = await inspectImage(docker, image);
  if (present !== undefined) return { image, built: false, sizeBytes: present.Size, seconds: 0 };
  // The published default image, when a registry is reachable and no build source was asked for.
  if (image === DEFAULT_DOCKER_IMAGE && options.from === undefined && options.base === undefined) {
    const began = performance.now();
    const pulled = await pullDefaultImage(docker, options).catch((error: unknown) => {
      if (options.signal?.aborted) throw error;
      options.onProgress?.(
        `pulling ${DEFAULT_DOCKER_IMAGE_SOURCE} failed (${(error as Error).message.split('\n')[0]}); building it instead`,
      );
      return undefined;
    });
    if (pulled)
      return {
        image,
        built: false,
        pulled: true,
        sizeBytes: pulled.Size,
        seconds: (performance.now() - began) / 1000,
      };
  }
  return buildDockerImage({
    tag: image,
    client: docker,
    ...(options.from !== undefined ? { from: options.from } : {}),
    ...(options.base !== undefined ? { base: options.base } : {}),
    ...(options.nodeVersion !== undefined ? { nodeVersion: options.nodeVersion } : {}),
    ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
  });
}

/** Pulls the published default image and tags it under its own name; its inspection after. */
async function pullDefaultImage(
  docker: Docker,
  options: EnsureDockerImageOptions,
): Promise<Docker.ImageInspectInfo | undefined> {
  options.onProgress?.(`pulling ${DEFAULT_DOCKER_IMAGE_SOURCE}`);
  await pullImage(docker, DEFAULT_DOCKER_IMAGE_SOURCE, {
    signal: options.signal,
    progress: options.onProgress,
  });
  const [repo, tag] = DEFAULT_DOCKER_IMAGE.split(':') as [string, string];
  await docker.getImage(DEFAULT_DOCKER_IMAGE_SOURCE).tag({ repo, tag });
  return inspectImage(docker, DEFAULT_DOCKER_IMAGE);
}

/** Progress lines `[12s] step`, and a line every few seconds while a step runs quietly. */
export class Progress {
  private step = 'starting';
  private readonly timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly started: number,
    private readonly sink: ((line: string) => void) | undefined,
  ) {
    if (sink) {
      this.timer = setInterval(() => this.emit(`… still working: ${this.step}`), HEARTBEAT_MS);
      this.timer.unref();
    }
  }

  /** Reports `message`; it names the current step unless `quiet` (a log line rather than a step). */
  line(message: string, quiet = false): void {
    if (!quiet) this.step = message.replace(/ \(.*$/, '');
    this.emit(message);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private emit(message: string): void {
    try {
      this.sink?.(`[${Math.round((Date.now() - this.started) / 1000)}s] ${message}`);
    } catch {
      // A failing progress callback does not stop the build.
    }
  }
}

async function buildFromDockerfile(
  docker: Docker,
  tag: string,
  options: BuildDockerImageOptions,
  progress: Progress,
): Promise<void> {
  const file = join(DOCKER_IMAGE_DIR, 'Dockerfile');
  const fingerprint = createHash('sha256')
    .update(
      `${readFileSync(file, 'utf8')}\n${options.mirror ?? ''}\n${baseOf(options)}\n${options.nodeVersion ?? ''}`,
    )
    .digest('hex')
    .slice(0, 16);
  const bare = `${tag}-bare`;
  const labelOf = async (name: string) =>
    (await inspectImage(docker, name))?.Config?.Labels?.[FINGERPRINT_LABEL];
  const build = (target: 'workspace' | 'bare', name: string) =>
    dockerBuild(docker, { target, name, fingerprint, options, progress });
  if (!options.force && (await labelOf(tag)) === fingerprint) {
    progress.line(`${tag} is up to date (${fingerprint})`);
    if ((await labelOf(bare)) !== `${fingerprint}-bare`) {
      await build('bare', bare);
      progress.line(`${bare} built (no node, no ripgrep)`);
    }
    return;
  }
  const started = Date.now();
  progress.line(`building ${tag} with docker build (${file}, FROM ${baseOf(options)})`);
  await build('workspace', tag);
  const size = (await inspectImage(docker, tag))?.Size ?? 0;
  progress.line(`${tag} built in ${Math.round((Date.now() - started) / 1000)} s (${megabytes(size)})`);
  await build('bare', bare);
  progress.line(`${bare} built (no node, no ripgrep)`);
}

async function dockerBuild(
  docker: Docker,
  build: {
    target: 'workspace' | 'bare';
    name: string;
    fingerprint: string;
    options: BuildDockerImageOptions;
    progress: Progress;
  },
): Promise<void> {
  const { signal, mirror, force, nodeVersion } = build.options;
  const base = baseOf(build.options);
  // What the Dockerfile's own checks say (a line of theirs), which explains a failure best.
  let stated: string | undefined;
  const fail = (reason: string, cause?: unknown) =>
    new WsError(
      'BACKEND_ERROR',
      stated !== undefined
        ? `docker build of ${build.name} failed: ${stated}`
        : `docker build of ${build.name} failed: ${firstLine(reason)} (the Dockerfile needs ${base} from a registry or the engine; --from debian needs none)`,
      { cause, details: { image: build.name, from: 'dockerfile', base } },
    );
  let stream: NodeJS.ReadableStream;
  try {
    stream = await docker.buildImage(
      { context: DOCKER_IMAGE_DIR, src: ['Dockerfile'] },
      {
        t: build.name,
        target: build.target,
        buildargs: {
          WS_FINGERPRINT: build.fingerprint,
          BASE: base,
          ...(nodeVersion !== undefined ? { NODE_VERSION: nodeVersion } : {}),
          ...(mirror !== undefined ? { MIRROR: mirror } : {}),
        },
        rm: true,
        forcerm: true,
        ...(force ? { nocache: true } : {}),
        ...(signal ? { abortSignal: signal } : {}),
      },
    );
  } catch (error) {
    if (signal?.aborted) throw abortError(signal);
    throw fail((error as Error).message, error);
  }
  await new Promise<void>((resolve, reject) => {
    let failure: string | undefined;
    // The build's output comes in pieces that may split a line, each piece of a command's stderr
    // wrapped in terminal colours: lines are read across pieces, the colours dropped.
    let partial = '';
    const hear = (said: string) => {
      if (said.startsWith('ws-docker-image: ')) stated = said.slice('ws-docker-image: '.length).trimEnd();
    };
    const onAbort = () => {
      (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      reject(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = (error?: unknown) => {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) reject(abortError(signal));
      else if (failure !== undefined) reject(fail(failure));
      else if (error !== undefined) reject(fail((error as Error).message, error));
      else resolve();
    };
    createInterface({ input: stream })
      .on('line', (line) => {
        let event: { stream?: string; status?: string; error?: string };
        try {
          event = JSON.parse(line);
        } catch {
          return;
        }
        if (event.error) {
          failure ??= event.error;
          hear(partial);
          partial = '';
        }
        // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape starts a colour code
        const lines = (partial + (event.stream ?? '').replace(/\u001b\[[0-9;]*m/g, '')).split('\n');
        partial = (lines.pop() ?? '').slice(-4096);
        for (const said of lines) hear(said);
        const text = (event.stream ?? '').trim();
        if (/^Step \d+\/\d+ : /.test(text)) build.progress.line(truncate(text));
        const status = event.status ?? '';
        if (/^(Pulling from|Digest:|Status:)/.test(status)) build.progress.line(truncate(status), true);
      })
      .once('close', () => {
        hear(partial);
        done();
      });
    stream.once('error', (error) => done(error));
  });
}

function checkTag(tag: unknown): asserts tag is string {
  if (typeof tag !== 'string' || !/^[A-Za-z0-9][\w.:/@-]*$/.test(tag))
    throw new WsError('INVALID_ARGUMENT', `Not an image tag: ${JSON.stringify(tag)}`);
}

/** The Dockerfile's base: `base`, else the Node image of `nodeVersion` (default 20). */
function baseOf(options: BuildDockerImageOptions): string {
  return options.base ?? `node:${options.nodeVersion ?? '20'}-bookworm-slim`;
}

function checkNodeVersion(version: unknown): void {
  if (version !== undefined && (typeof version !== 'string' || !/^\d{1,3}(\.\d{1,3})?$/.test(version)))
    throw new WsError(
      'INVALID_ARGUMENT',
      `nodeVersion takes a node major such as '20' (or major.minor), not ${JSON.stringify(version)}`,
      { details: { option: 'nodeVersion' } },
    );
}

/** What Debian bookworm's nodejs package is. */
const DEBIAN_NODE = '18.19.0';

/**
 * The node the debian build copies in for `nodeVersion`: this host's (`process.execPath`) when it is
 * that version, `debian` for bookworm's nodejs package when that is; undefined: the build's default.
 * @throws WsError `INVALID_ARGUMENT` naming the versions the debian build can provide.
 */
export function debianNode(version: string | undefined): string | undefined {
  if (version === undefined) return undefined;
  const host = process.version.replace(/^v/, '');
  const matches = (found: string) => `${found}.`.startsWith(`${version}.`);
  if (matches(host) && Number(host.split('.')[0]) >= 18) return process.execPath;
  if (matches(DEBIAN_NODE)) return 'debian';
  throw new WsError(
    'INVALID_ARGUMENT',
    `The debian build has no registry: it can provide node ${host} (this host's, copied in) or ${DEBIAN_NODE} (Debian bookworm's nodejs), not ${version}; run this with node ${version}, or build from the Dockerfile (from: 'dockerfile', ws-docker-image --from dockerfile --node ${version})`,
    { details: { option: 'nodeVersion', nodeVersion: version, host, debian: DEBIAN_NODE } },
  );
}

function checkSource(from: unknown): void {
  if (from !== undefined && from !== 'debian' && from !== 'dockerfile')
    throw new WsError(
      'INVALID_ARGUMENT',
      `from must be 'debian' or 'dockerfile', not ${JSON.stringify(from)}`,
    );
}

function dockerClient(client: Docker | Docker.DockerOptions | undefined): Docker {
  return client instanceof Docker ? client : new Docker(client);
}

async function ping(docker: Docker): Promise<void> {
  try {
    await docker.ping();
  } catch (error) {
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `No Docker engine answers (${firstLine((error as Error).message)}); start dockerd`,
      { cause: error },
    );
  }
}

/** The image's inspection, or undefined when the engine has no such image. */
async function inspectImage(docker: Docker, name: string): Promise<Docker.ImageInspectInfo | undefined> {
  try {
    return await docker.getImage(name).inspect();
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return undefined;
    if (isWsError(error)) throw error;
    throw new WsError(
      'BACKEND_UNAVAILABLE',
      `Cannot inspect the image ${name} (${firstLine((error as Error).message)}); is the Docker engine running?`,
      { cause: error },
    );
  }
}

/** `257 MB`, as build-image.sh prints sizes. */
export function megabytes(bytes: number): string {
  return `${Math.round(bytes / 1e6)} MB`;
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

function truncate(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
