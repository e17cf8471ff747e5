import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { McpServerSpec, Workspace } from '@ws/core';
import { makeHostDirs } from '@ws/core/backend';
import { type OptionSpec, parseDuration, parsePairs, UsageError } from './cli-args.js';

export const BACKENDS = ['local', 'bwrap', 'docker', 'e2b', 'daytona', 'k8s'] as const;
export type BackendName = (typeof BACKENDS)[number];

const PACKAGES: Readonly<Record<BackendName, string>> = {
  local: '@ws/local',
  bwrap: '@ws/bwrap',
  docker: '@ws/docker',
  e2b: '@ws/e2b',
  daytona: '@ws/daytona',
  k8s: '@ws/k8s',
};

/** The flags that choose and configure a backend, shared by `serve` and `exec`. */
export const BACKEND_OPTIONS = {
  backend: { type: 'string', short: 'b' },
  workdir: { type: 'string' },
  'workspace-id': { type: 'string' },
  image: { type: 'string' },
  volume: { type: 'string' },
  network: { type: 'string' },
  env: { type: 'string', multiple: true },
  'api-key': { type: 'string' },
  'api-url': { type: 'string' },
  namespace: { type: 'string' },
  kubeconfig: { type: 'string' },
  'mcp-config': { type: 'string' },
  skill: { type: 'string', multiple: true },
  'start-timeout': { type: 'string' },
} as const satisfies OptionSpec;

export const BACKEND_HELP = `Backend options (flags win over the WS_* environment variables in brackets):
  -b, --backend NAME       local (default), bwrap, docker, e2b, daytona or k8s   [WS_BACKEND]
  --workdir DIR            host folder the workspace works in (local, bwrap, docker); without it
                           the workspace is temporary: deleted (local) or removed (container) on exit
                                                                                 [WS_WORKDIR]
  --workspace-id ID        the workspace id, to re-attach to an existing one      [WS_WORKSPACE_ID]
  --image NAME             container image (docker, daytona, k8s) or template (e2b)   [WS_IMAGE]
  --volume NAME            named volume mounted as the workdir (docker)
  --network NAME           container network: none, bridge or a network name (docker)
  --env KEY=VALUE          variable for every command (repeatable)
  --api-key KEY            e2b or daytona API key (else E2B_API_KEY / DAYTONA_API_KEY)
  --api-url URL            e2b or daytona API URL
  --namespace NAME         Kubernetes namespace (k8s)
  --kubeconfig FILE        kubeconfig file (k8s; default: the usual lookup)
  --mcp-config FILE        MCP servers for the workspace, as {"mcpServers": {"name": {"command": …,
                           "args": […]} or {"url": …}}} (the format of desktop MCP clients)
  --skill DIR              a folder holding a SKILL.md, installed into the workspace (repeatable)
  --start-timeout TIME     give up opening the workspace after TIME (default 5m)
`;

type BackendValues = {
  [Key in keyof typeof BACKEND_OPTIONS]?: (typeof BACKEND_OPTIONS)[Key] extends { multiple: true }
    ? string[]
    : string;
};

/** Which backends each backend-specific flag applies to; the rest apply to all. */
const APPLIES_TO: Partial<Record<keyof typeof BACKEND_OPTIONS, readonly BackendName[]>> = {
  workdir: ['local', 'bwrap', 'docker'],
  image: ['docker', 'e2b', 'daytona', 'k8s'],
  volume: ['docker'],
  network: ['docker'],
  'api-key': ['e2b', 'daytona'],
  'api-url': ['e2b', 'daytona'],
  namespace: ['k8s'],
  kubeconfig: ['k8s'],
};

export interface OpenedWorkspace {
  readonly workspace: Workspace;
  readonly backend: BackendName;
  /** Closes the workspace and deletes what only this run used (a temporary local workdir). */
  dispose(): Promise<void>;
}

/** Resolves the backend and its options from flags and the environment, before any I/O. */
export function backendFromValues(values: BackendValues, env: NodeJS.ProcessEnv = process.env) {
  const backend = values.backend ?? env.WS_BACKEND ?? 'local';
  if (!(BACKENDS as readonly string[]).includes(backend)) {
    throw new UsageError(`unknown backend ${JSON.stringify(backend)}; use one of ${BACKENDS.join(', ')}`);
  }
  const name = backend as BackendName;
  for (const [flag, backends] of Object.entries(APPLIES_TO)) {
    if (values[flag as keyof BackendValues] !== undefined && !backends.includes(name)) {
      throw new UsageError(`--${flag} does not apply to the ${name} backend (only ${backends.join(', ')})`);
    }
  }
  if (values.volume !== undefined && values.workdir !== undefined) {
    throw new UsageError('--workdir and --volume exclude each other');
  }
  const workdir = values.workdir ?? (APPLIES_TO.workdir?.includes(name) ? env.WS_WORKDIR : undefined);
  const image = values.image ?? (APPLIES_TO.image?.includes(name) ? env.WS_IMAGE : undefined);
  const workspaceId = values['workspace-id'] ?? env.WS_WORKSPACE_ID;
  const startTimeoutMs = parseDuration('start-timeout', values['start-timeout'] ?? '5m');
  return {
    backend: name,
    workdir,
    image,
    workspaceId,
    startTimeoutMs,
    env: parsePairs('env', values.env),
    values,
  };
}

/** Opens the workspace a command asked for; the backend package is imported only now. */
export async function openWorkspace(values: BackendValues, signal: AbortSignal): Promise<OpenedWorkspace> {
  const options = backendFromValues(values);
  const { backend, image, env, values: flags } = options;
  const hostWorkdir = options.workdir === undefined ? undefined : await prepareHostDir(options.workdir);
  const temporary = backend === 'local' && hostWorkdir === undefined;
  const common = {
    ...(options.workspaceId ? { workspaceId: options.workspaceId } : {}),
    ...(flags['mcp-config'] ? { defaultMcps: await readMcpConfig(flags['mcp-config']) } : {}),
    ...(flags.skill ? { skillPaths: await checkSkillPaths(flags.skill) } : {}),
    ...(env ? { env } : {}),
  };
  const workspace = await construct(backend, common, {
    hostWorkdir: hostWorkdir ?? (temporary ? await mkdtemp(join(tmpdir(), 'ws-')) : undefined),
    image,
    volume: flags.volume,
    network: flags.network,
    apiKey: flags['api-key'],
    apiUrl: flags['api-url'],
    namespace: flags.namespace,
    kubeconfig: flags.kubeconfig,
  });
  const closing = async () => {
    if (temporary) await workspace.destroy().catch(() => workspace.close());
    else await workspace.close();
  };
  // Closing must not keep the command from exiting: after a command that timed out, @ws/local's
  // close() can wait on a process group that never reports empty (reported upstream).
  const graceMs = backend === 'local' || backend === 'bwrap' ? 3_000 : 60_000;
  const dispose = () => settleWithin(closing(), graceMs);
  try {
    await workspace.initialize({
      signal: AbortSignal.any([signal, AbortSignal.timeout(options.startTimeoutMs)]),
    });
  } catch (error) {
    await dispose().catch(() => {});
    if (error instanceof Error && error.name === 'TimeoutError') {
      throw new Error(`opening the ${backend} workspace took longer than ${flags['start-timeout'] ?? '5m'}`);
    }
    throw error;
  }
  return { workspace, backend, dispose };
}

/** Waits for a promise at most `ms` (its failure is ignored: the command's result is what matters). */
async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

interface BackendSpecific {
  hostWorkdir: string | undefined;
  image: string | undefined;
  volume: string | undefined;
  network: string | undefined;
  apiKey: string | undefined;
  apiUrl: string | undefined;
  namespace: string | undefined;
  kubeconfig: string | undefined;
}

/** Drops undefined values, so that a backend's option-key check sees only what was set. */
function defined<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}

async function construct(
  backend: BackendName,
  common: Record<string, unknown>,
  specific: BackendSpecific,
): Promise<Workspace> {
  const imported = await importBackend(backend);
  const { hostWorkdir, image, volume, network, apiKey, apiUrl, namespace, kubeconfig } = specific;
  switch (backend) {
    case 'local': {
      const { LocalWorkspace } = imported as typeof import('@ws/local');
      return new LocalWorkspace({ ...common, hostWorkdir: hostWorkdir ?? '.' });
    }
    case 'bwrap': {
      const { BubblewrapWorkspace } = imported as typeof import('@ws/bwrap');
      return new BubblewrapWorkspace({ ...common, ...defined({ hostWorkdir }) });
    }
    case 'docker': {
      const { DockerWorkspace } = imported as typeof import('@ws/docker');
      return new DockerWorkspace({ ...common, ...defined({ hostWorkdir, image, volume, network }) });
    }
    case 'e2b': {
      const { E2BWorkspace } = imported as typeof import('@ws/e2b');
      return new E2BWorkspace({ ...common, ...defined({ template: image, apiKey, apiUrl }) });
    }
    case 'daytona': {
      const { DaytonaWorkspace } = imported as typeof import('@ws/daytona');
      return new DaytonaWorkspace({ ...common, ...defined({ image, apiKey, apiUrl }) });
    }
    case 'k8s': {
      const { K8sWorkspace } = imported as typeof import('@ws/k8s');
      return new K8sWorkspace({ ...common, ...defined({ image, namespace, kubeconfig }) });
    }
  }
}

/** Imports a backend package; a missing one is a one-line error naming what to install. */
async function importBackend(backend: BackendName): Promise<unknown> {
  const name = PACKAGES[backend];
  try {
    // One literal import per package so that bundlers keep each one a separate, optional chunk.
    switch (backend) {
      case 'local':
        return await import('@ws/local');
      case 'bwrap':
        return await import('@ws/bwrap');
      case 'docker':
        return await import('@ws/docker');
      case 'e2b':
        return await import('@ws/e2b');
      case 'daytona':
        return await import('@ws/daytona');
      case 'k8s':
        return await import('@ws/k8s');
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${name}'`)) {
      throw new UsageError(`the ${backend} backend needs the package ${name}: npm install ${name}`);
    }
    throw error;
  }
}

/** Creates the workdir (one level at a time, see `makeHostDirs`); a failure is a usage error. */
export async function prepareHostDir(path: string): Promise<string> {
  const absolute = resolve(path);
  await makeHostDirs(absolute).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOTDIR') throw new UsageError(`cannot use ${path} as the workdir: not a directory`);
    throw new UsageError(`cannot create the workdir ${path}: ${error.code ?? error.message}`);
  });
  return absolute;
}

async function checkSkillPaths(paths: readonly string[]): Promise<string[]> {
  return Promise.all(
    paths.map(async (path) => {
      const absolute = resolve(path);
      const info = await stat(join(absolute, 'SKILL.md')).catch(() => undefined);
      if (!info?.isFile()) throw new UsageError(`--skill ${path}: no SKILL.md in that folder`);
      return absolute;
    }),
  );
}

/** Reads MCP servers in the `{"mcpServers": {…}}` format desktop MCP clients use. */
export async function readMcpConfig(path: string): Promise<McpServerSpec[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(`--mcp-config ${path}: ${reason}`);
  }
  const servers = (parsed as { mcpServers?: unknown } | null)?.mcpServers;
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new UsageError(`--mcp-config ${path}: expected {"mcpServers": {"<name>": {…}}}`);
  }
  return Object.entries(servers).map(([name, entry]): McpServerSpec => {
    const server = entry as Record<string, unknown>;
    const bad = (why: string) =>
      new UsageError(`--mcp-config ${path}: server ${JSON.stringify(name)} ${why}`);
    if (typeof server !== 'object' || server === null) throw bad('is not an object');
    const strings = (value: unknown) =>
      Array.isArray(value) && value.every((item) => typeof item === 'string')
        ? (value as string[])
        : undefined;
    const record = (value: unknown) =>
      typeof value === 'object' &&
      value !== null &&
      Object.values(value).every((item) => typeof item === 'string')
        ? (value as Record<string, string>)
        : undefined;
    if (typeof server.command === 'string') {
      if (server.args !== undefined && !strings(server.args)) throw bad('has "args" that are not strings');
      if (server.env !== undefined && !record(server.env)) throw bad('has an "env" that is not strings');
      return {
        name,
        transport: {
          type: 'stdio',
          command: server.command,
          ...(server.args ? { args: strings(server.args) } : {}),
          ...(server.env ? { env: record(server.env) } : {}),
          ...(typeof server.cwd === 'string' ? { cwd: server.cwd } : {}),
        },
      };
    }
    if (typeof server.url === 'string') {
      if (server.headers !== undefined && !record(server.headers))
        throw bad('has "headers" that are not strings');
      return {
        name,
        transport: {
          type: 'http',
          url: server.url,
          ...(server.headers ? { headers: record(server.headers) } : {}),
        },
      };
    }
    throw bad('needs a "command" or a "url"');
  });
}
