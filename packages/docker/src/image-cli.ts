#!/usr/bin/env node
// ws-docker-image: builds the workspace image of @ws/docker (see USAGE). Progress lines go to stderr,
// the result line to stdout; a failure is one line on stderr and exit code 1.
import { parseArgs } from 'node:util';
import { buildDockerImage, DEFAULT_DOCKER_IMAGE, type DockerImageSource, megabytes } from './image-build.js';

const USAGE = `Usage: ws-docker-image [--tag TAG] [--from debian|dockerfile] [--base IMAGE] [--node VERSION]
                       [--mirror URL] [--force] [--help]

Builds the Docker image of @ws/docker workspaces, and TAG-bare (the same without node and ripgrep),
unless an image with the same fingerprint is already there.

  --tag TAG            the image's tag (default: ${DEFAULT_DOCKER_IMAGE})
  --from debian        (default) no registry needed: debootstrap bookworm from a Debian mirror, node
                       copied from this host; needs root, debootstrap (apt-get install debootstrap)
                       and the docker CLI
  --from dockerfile    docker build of the shipped Dockerfile (FROM node:20-bookworm-slim): needs a
                       registry, or the base image in the engine
  --base IMAGE         the Dockerfile's base image (a Debian or Ubuntu image with node 18 or newer;
                       apt adds what it lacks of ripgrep, tar, bash, procps); implies --from dockerfile
  --node VERSION       the node major the image gets (20, or 20.11): from the Dockerfile, the base
                       node:VERSION-bookworm-slim, or a --base that must have it; from debian, this
                       host's node when it is VERSION, else Debian's nodejs when VERSION is 18
                       (anything else is refused, naming what it can provide)
  --mirror URL         the Debian mirror (default: http://deb.debian.org/debian)
  --force              rebuild even when the image is up to date
  -h, --help           show this help

Progress goes to stderr, as "[seconds] step"; the last line (stdout) names the tag and its size.
Exit code: 0 when the image is ready, 1 otherwise.`;

const SOURCES: readonly string[] = ['debian', 'dockerfile'] satisfies DockerImageSource[];

/** A one-line reason for a command-line parsing error. */
function usageError(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const option = /'([^']+)'/.exec(message ?? '')?.[1]?.replace(/ <value>$/, '');
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option ?? ''} (see --help)`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `unexpected argument ${option ?? ''} (see --help)`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
    return `${option ?? 'an option'} needs a value (see --help)`;
  return `${String(message ?? error).split('\n')[0]} (see --help)`;
}

async function main(args: string[]): Promise<number> {
  let values: {
    tag?: string;
    from?: string;
    base?: string;
    node?: string;
    mirror?: string;
    force?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        tag: { type: 'string' },
        from: { type: 'string' },
        base: { type: 'string' },
        node: { type: 'string' },
        mirror: { type: 'string' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    return fail(usageError(error));
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const from = values.from ?? (values.base !== undefined ? 'dockerfile' : 'debian');
  if (!SOURCES.includes(from)) return fail(`--from takes debian or dockerfile, not ${JSON.stringify(from)}`);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const result = await buildDockerImage({
      from: from as DockerImageSource,
      force: values.force ?? false,
      signal: controller.signal,
      onProgress: (line) => process.stderr.write(`${line}\n`),
      ...(values.tag !== undefined ? { tag: values.tag } : {}),
      ...(values.mirror !== undefined ? { mirror: values.mirror } : {}),
      ...(values.base !== undefined ? { base: values.base } : {}),
      ...(values.node !== undefined ? { nodeVersion: values.node } : {}),
    });
    const state = result.built ? `built in ${result.seconds} s` : 'is up to date';
    process.stdout.write(`${result.image} ${state} (${megabytes(result.sizeBytes)})\n`);
    return 0;
  } catch (error) {
    if (controller.signal.aborted) return fail('interrupted; the build was stopped');
    return fail(error instanceof Error ? error.message : String(error));
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

function fail(reason: string): number {
  process.stderr.write(`ws-docker-image: ${reason.replace(/\s*\n\s*/g, ' ')}\n`);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = fail(String(error));
  },
);
