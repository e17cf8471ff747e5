import type { GcOptions, GcReport, SandboxPolicyOptions, Workspace } from '@ws/core';
import { UsageError } from './cli-args.js';
import type { BackendName, BackendSettings } from './settings.js';

/** What opening a workspace needs besides the backend's own settings. */
export interface OpenInput {
  /** Options every backend takes (`workspaceId`, `defaultMcps`, `skillPaths`, `env`, `user`). */
  readonly common: Record<string, unknown>;
  /** The host workdir (local, bwrap, docker), already created; local always has one. */
  readonly hostWorkdir: string | undefined;
  readonly settings: BackendSettings;
}

/**
 * One backend: its npm package, imported only when the backend is picked, how to open a workspace on
 * it and how to run its reaper. Adding a backend is one entry here (and its name in `BACKENDS`).
 */
interface BackendEntry {
  readonly package: string;
  /** One literal import per package, so that bundlers keep each an optional chunk of its own. */
  load(): Promise<unknown>;
  open(module: unknown, input: OpenInput): Workspace;
  /** Runs the backend's reaper with the settings' connection options. */
  reap(module: unknown, options: GcOptions, settings: BackendSettings): Promise<GcReport>;
}

/** Drops undefined values, so that a backend's option-key check sees only what was set. */
function defined<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}

type Reap = <Options extends GcOptions>(options: Options) => Promise<GcReport>;

/** The reaper `name` of a backend module; an older package without one is a one-line error. */
function reaper(module: unknown, name: string, packageName: string): Reap {
  const found = (module as Record<string, unknown>)[name];
  if (typeof found !== 'function')
    throw new UsageError(
      `the installed ${packageName} has no reaper (${name}); upgrade it: npm install ${packageName}@latest`,
    );
  return found as Reap;
}

/**
 * The sandbox policy options every backend takes, those set. A backend refuses what it cannot
 * enforce (`CAPABILITY_UNSUPPORTED`) when it opens; the command passes everything on and does not
 * guess.
 */
export function policyOptions({ limits, network, privileges }: BackendSettings): SandboxPolicyOptions {
  return defined({ limits, network, privileges });
}

/** The folders a host-files reaper searches: `--root`s, else the workdir. */
function rootsOf(settings: BackendSettings): string[] | undefined {
  if (settings.roots && settings.roots.length > 0) return [...settings.roots];
  return settings.workdir ? [settings.workdir] : undefined;
}

export const BACKEND_TABLE: Readonly<Record<BackendName, BackendEntry>> = {
  local: {
    package: '@ws/local',
    load: () => import('@ws/local'),
    open(module, { common, hostWorkdir, settings }) {
      const { LocalWorkspace } = module as typeof import('@ws/local');
      return new LocalWorkspace({ ...common, ...policyOptions(settings), hostWorkdir: hostWorkdir ?? '.' });
    },
    reap(module, options, settings) {
      const roots = rootsOf(settings);
      if (!roots)
        throw new UsageError(
          'the local backend keeps nothing of its own: name the folders to search with --root DIR (a workdir, or a folder of workdirs)',
        );
      return reaper(module, 'gcLocal', '@ws/local')({ ...options, roots });
    },
  },
  bwrap: {
    package: '@ws/bwrap',
    load: () => import('@ws/bwrap'),
    open(module, { common, hostWorkdir, settings }) {
      const { BubblewrapWorkspace } = module as typeof import('@ws/bwrap');
      return new BubblewrapWorkspace({ ...common, ...policyOptions(settings), ...defined({ hostWorkdir }) });
    },
    reap(module, options, settings) {
      return reaper(module, 'gcBwrap', '@ws/bwrap')({ ...options, ...defined({ roots: rootsOf(settings) }) });
    },
  },
  docker: {
    package: '@ws/docker',
    load: () => import('@ws/docker'),
    open(module, { common, hostWorkdir, settings }) {
      const { DockerWorkspace } = module as typeof import('@ws/docker');
      const { image, volume, networkName, owner } = settings;
      // Docker also takes a network by name (`bridge`, a user-defined network).
      const network = networkName ?? settings.network;
      return new DockerWorkspace({
        ...common,
        ...policyOptions(settings),
        ...defined({ hostWorkdir, image, volume, network, owner }),
      });
    },
    reap(module, options) {
      return reaper(module, 'gcDocker', '@ws/docker')(options);
    },
  },
  e2b: {
    package: '@ws/e2b',
    load: () => import('@ws/e2b'),
    open(module, { common, settings }) {
      const { E2BWorkspace } = module as typeof import('@ws/e2b');
      const { image, apiKey, apiUrl, owner } = settings;
      return new E2BWorkspace({
        ...common,
        ...policyOptions(settings),
        ...defined({ template: image, apiKey, apiUrl, owner }),
      });
    },
    reap(module, options, { apiKey, apiUrl }) {
      return reaper(module, 'gcE2B', '@ws/e2b')({ ...options, ...defined({ apiKey, apiUrl }) });
    },
  },
  daytona: {
    package: '@ws/daytona',
    load: () => import('@ws/daytona'),
    open(module, { common, settings }) {
      const { DaytonaWorkspace } = module as typeof import('@ws/daytona');
      const { image, apiKey, apiUrl, owner } = settings;
      return new DaytonaWorkspace({
        ...common,
        ...policyOptions(settings),
        ...defined({ image, apiKey, apiUrl, owner }),
      });
    },
    reap(module, options, { apiKey, apiUrl }) {
      return reaper(module, 'gcDaytona', '@ws/daytona')({ ...options, ...defined({ apiKey, apiUrl }) });
    },
  },
  k8s: {
    package: '@ws/k8s',
    load: () => import('@ws/k8s'),
    open(module, { common, settings }) {
      const { K8sWorkspace } = module as typeof import('@ws/k8s');
      const { image, namespace, kubeconfig, owner } = settings;
      return new K8sWorkspace({
        ...common,
        ...policyOptions(settings),
        ...defined({ image, namespace, kubeconfig, owner }),
      });
    },
    reap(module, options, { namespace, kubeconfig }) {
      return reaper(module, 'gcK8s', '@ws/k8s')({ ...options, ...defined({ namespace, kubeconfig }) });
    },
  },
  opensandbox: {
    package: '@ws/opensandbox',
    load: () => import('@ws/opensandbox'),
    open(module, { common, settings }) {
      const { OpenSandboxWorkspace } = module as typeof import('@ws/opensandbox');
      const { image, apiKey, apiUrl, owner } = settings;
      return new OpenSandboxWorkspace({
        ...common,
        ...policyOptions(settings),
        ...defined({ image, apiKey, domain: apiUrl, owner }),
      });
    },
    reap(module, options, { apiKey, apiUrl }) {
      return reaper(
        module,
        'gcOpenSandbox',
        '@ws/opensandbox',
      )({ ...options, ...defined({ apiKey, domain: apiUrl }) });
    },
  },
};

/** Imports a backend's package; a missing one is a one-line error naming what to install. */
export async function loadBackend(backend: BackendName): Promise<unknown> {
  const entry = BACKEND_TABLE[backend];
  try {
    return await entry.load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${entry.package}'`)) {
      throw new UsageError(
        `the ${backend} backend needs the package ${entry.package}: npm install ${entry.package}`,
      );
    }
    throw error;
  }
}
