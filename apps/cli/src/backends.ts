import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { McpServerSpec, Workspace } from '@ws/core';
import { makeHostDirs } from '@ws/core/backend';
import { BACKEND_TABLE, loadBackend } from './backend-table.js';
import { type OptionSpec, UsageError } from './cli-args.js';
import { settleWithin, untilAborted } from './deadline.js';
import { Progress } from './progress.js';
import { type BackendName, type FlagValues, resolveSettings } from './settings.js';

/** The flags that choose and configure a backend, shared by `serve` and `exec`. */
export const BACKEND_OPTIONS = {
  backend: { type: 'string', short: 'b' },
  config: { type: 'string' },
  workdir: { type: 'string' },
  'workspace-id': { type: 'string' },
  image: { type: 'string' },
  volume: { type: 'string' },
  network: { type: 'string' },
  'network-allow': { type: 'string', multiple: true },
  cpus: { type: 'string' },
  memory: { type: 'string' },
  pids: { type: 'string' },
  disk: { type: 'string' },
  privileges: { type: 'string' },
  user: { type: 'string' },
  env: { type: 'string', multiple: true },
  'api-key': { type: 'string' },
  'api-url': { type: 'string' },
  namespace: { type: 'string' },
  kubeconfig: { type: 'string' },
  owner: { type: 'string' },
  'mcp-config': { type: 'string' },
  skill: { type: 'string', multiple: true },
  'start-timeout': { type: 'string' },
} as const satisfies OptionSpec;

export const CONFIG_HELP = `Settings come from flags, else the WS_* environment variables in brackets, else the config
file (--config FILE or WS_CONFIG): JSON whose keys are the long flag names, at the top for any
backend or under a backend's name, such as
  {"backend": "docker", "docker": {"image": "ws-workspace:bookworm"}, "e2b": {"api-url": "…"}}
Paths in the file are relative to it. A flag that does not apply to the chosen backend is refused.
`;

export const BACKEND_HELP = `Backend options:
  -b, --backend NAME       local (default), bwrap, docker, e2b, daytona, k8s or opensandbox
                                                                                 [WS_BACKEND]
  --config FILE            read settings from this JSON file (see below)            [WS_CONFIG]
  --workdir DIR            host folder the workspace works in (local, bwrap, docker); without it
                           the workspace is temporary: deleted (local) or removed (container) on exit
                                                                                 [WS_WORKDIR]
  --workspace-id ID        the workspace id, to re-attach to an existing one; without one, a
                           cloud workspace (e2b, daytona, k8s, opensandbox) is deleted at exit
                                                                                 [WS_WORKSPACE_ID]
  --image NAME             container image (docker, daytona, k8s, opensandbox) or template (e2b)
                                                                                   [WS_IMAGE]
  --volume NAME            named volume mounted as the workdir (docker)
  --network MODE           none (no network), full (the backend's ordinary network) or, on docker,
                           a Docker network's name such as bridge                   [WS_NETWORK]
  --network-allow HOST     only these hosts, addresses, CIDR blocks or *.example.com wildcards
                           (repeatable or comma-separated), where the backend can enforce it;
                           excludes --network                                 [WS_NETWORK_ALLOW]
  --cpus N                 CPUs the sandbox may use (fractions allowed: 0.5)          [WS_CPUS]
  --memory SIZE            memory cap in MiB (512, 512M, 2G); past it a process is killed
                                                                                  [WS_MEMORY]
  --pids N                 most processes and threads at once                        [WS_PIDS]
  --disk SIZE              disk space of the sandbox in MiB (512, 512M, 2G)          [WS_DISK]
  --privileges MODE        hardened (no capabilities, no setuid) or standard (the backend's
                           ordinary privileges, so root can install packages)   [WS_PRIVILEGES]
                           A backend that cannot enforce a limit, network or privilege setting
                           refuses to open (CAPABILITY_UNSUPPORTED) rather than run without it.
  --user USER              who commands and file writes run as: a name or uid[:gid] (docker: a
                           user of the image or a uid; k8s: uid[:gid] only; e2b, daytona: a name;
                           local, bwrap and opensandbox refuse it)                     [WS_USER]
  --env KEY=VALUE          variable for every command (repeatable)
  --api-key KEY            e2b, daytona or opensandbox API key (else E2B_API_KEY, DAYTONA_API_KEY,
                           OPEN_SANDBOX_API_KEY)
  --api-url URL            e2b or daytona API URL; opensandbox server (host:port or URL)
  --namespace NAME         Kubernetes namespace (k8s)
  --kubeconfig FILE        kubeconfig file (k8s; default: the usual lookup)
  --owner TAG              owner tag put on what the workspace creates, for ws ls / ws gc --owner
                           (docker, e2b, daytona, k8s, opensandbox)                  [WS_OWNER]
  --mcp-config FILE        MCP servers for the workspace, as {"mcpServers": {"name": {"command": …,
                           "args": […]} or {"url": …}}} (the format of desktop MCP clients)
  --skill DIR              a folder holding a SKILL.md, installed into the workspace (repeatable)
  --start-timeout TIME     give up opening the workspace after TIME (default 5m)

${CONFIG_HELP}`;

export interface OpenedWorkspace {
  readonly workspace: Workspace;
  readonly backend: BackendName;
  /** Closes the workspace and deletes what only this run used (a temporary local workdir). */
  dispose(): Promise<void>;
}

/** Opens the workspace a command asked for; the backend package is imported only now. */
export async function openWorkspace(values: FlagValues, signal: AbortSignal): Promise<OpenedWorkspace> {
  const settings = resolveSettings(values);
  const { backend } = settings;
  const hostWorkdir = settings.workdir === undefined ? undefined : await prepareHostDir(settings.workdir);
  const temporary = backend === 'local' && hostWorkdir === undefined;
  // A cloud workspace nobody named cannot be found again: deleted at exit rather than left paused.
  const unnamed = settings.workspaceId === undefined && CLOUD.has(backend);
  const common = {
    ...(settings.workspaceId ? { workspaceId: settings.workspaceId } : {}),
    ...(settings.mcpConfig ? { defaultMcps: await readMcpConfig(settings.mcpConfig) } : {}),
    ...(settings.skills ? { skillPaths: await checkSkillPaths(settings.skills) } : {}),
    ...(settings.env ? { env: settings.env } : {}),
    // Every backend gets it: one that cannot switch users refuses it, saying why.
    ...(settings.user ? { user: settings.user } : {}),
  };
  const module = await loadBackend(backend);
  const temporaryDir = temporary ? await mkdtemp(join(tmpdir(), 'ws-')) : undefined;
  let workspace: Workspace;
  try {
    workspace = BACKEND_TABLE[backend].open(module, {
      common,
      hostWorkdir: hostWorkdir ?? temporaryDir,
      settings,
    });
  } catch (error) {
    // A backend refuses options it cannot enforce in its constructor: the temporary folder goes.
    if (temporaryDir) await rm(temporaryDir, { recursive: true, force: true }).catch(() => {});
    throw error;
  }
  const closing = async () => {
    if (temporary || unnamed) await workspace.destroy().catch(() => workspace.close());
    else await workspace.close();
  };
  // Closing must not keep the command from exiting for long (a backend that does not answer).
  const graceMs = backend === 'local' || backend === 'bwrap' ? 3_000 : 60_000;
  const dispose = (ms = graceMs) =>
    Progress.around(`closing the ${backend} workspace`, () => settleWithin(closing(), ms));
  const deadline = AbortSignal.timeout(settings.startTimeoutMs);
  try {
    const opening = AbortSignal.any([signal, deadline]);
    await Progress.around(`opening the ${backend} workspace${STARTING[backend] ?? ''}`, () =>
      untilAborted(workspace.initialize({ signal: opening }), opening),
    );
  } catch (error) {
    // A backend that did not open in time may not answer a close either: what it made meanwhile
    // is left to ws gc.
    await dispose(Math.min(graceMs, 5_000)).catch(() => {});
    if (deadline.aborted && !signal.aborted) {
      throw new Error(`opening the ${backend} workspace took longer than ${settings.startTimeout}`);
    }
    throw error;
  }
  return { workspace, backend, dispose: () => dispose() };
}

/** Backends whose sandboxes outlive the command (paused or stopped by `close()`). */
const CLOUD: ReadonlySet<BackendName> = new Set(['e2b', 'daytona', 'k8s', 'opensandbox']);

/** What opening a workspace does on each backend, for the progress line. */
const STARTING: Partial<Record<BackendName, string>> = {
  bwrap: ' (starting the gateway)',
  docker: ' (creating the container, starting the gateway)',
  e2b: ' (creating the sandbox, starting the gateway)',
  daytona: ' (creating the sandbox, starting the gateway)',
  k8s: ' (creating the Pod, starting the gateway)',
  opensandbox: ' (creating the sandbox, starting the gateway)',
};

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
/** An HTTP server's `"type"` in an `mcpServers` file → the transport's type. */
const HTTP_TYPES: Readonly<Record<string, 'sse' | 'streamable-http'>> = {
  sse: 'sse',
  http: 'streamable-http',
  'streamable-http': 'streamable-http',
  streamableHttp: 'streamable-http',
};

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
      // "type" as desktop clients write it: "sse", or "http"/"streamable-http" for streamable HTTP;
      // without one, the URL chooses (SSE for a path ending in /sse or /messages/).
      const type =
        server.type === undefined
          ? 'http'
          : Object.hasOwn(HTTP_TYPES, String(server.type))
            ? HTTP_TYPES[String(server.type)]
            : undefined;
      if (!type)
        throw bad(`has "type" ${JSON.stringify(server.type)}; use "sse", "http" or "streamable-http"`);
      return {
        name,
        transport: {
          type,
          url: server.url,
          ...(server.headers ? { headers: record(server.headers) } : {}),
        },
      };
    }
    throw bad('needs a "command" or a "url"');
  });
}
