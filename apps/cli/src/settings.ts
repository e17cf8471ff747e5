import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { NetworkPolicy, Privileges, WorkspaceLimits } from '@ws/core';
import { parseDuration, parsePairs, UsageError } from './cli-args.js';
import {
  LIMIT_SETTINGS,
  type LimitSetting,
  parseAllowList,
  parseLimit,
  parseNetwork,
  parsePrivileges,
  parseUser,
} from './policy-flags.js';

/** Every backend the command knows, in the order the help lists them. */
export const BACKENDS = ['local', 'bwrap', 'docker', 'e2b', 'daytona', 'k8s', 'opensandbox'] as const;
export type BackendName = (typeof BACKENDS)[number];

/** Backends whose workspaces carry an owner tag (`ws.owner`), for `ws ls --owner` / `ws gc --owner`. */
export const OWNER_TAGGED: readonly BackendName[] = ['docker', 'e2b', 'daytona', 'k8s', 'opensandbox'];

/**
 * `string`, `path`, `paths` (one or a list), `pairs` (KEY=VALUE), `number` (a string or, in a config
 * file, a JSON number), `list` (strings, each of them comma-separated items).
 */
type Kind = 'string' | 'path' | 'paths' | 'pairs' | 'number' | 'list';

interface SettingSpec {
  readonly kind: Kind;
  /** The backends it applies to; all when missing. */
  readonly backends?: readonly BackendName[];
  /** The environment variable that sets it (below flags, above the config file). */
  readonly env?: string;
  /** Checks one value, whatever its origin; `label` names the origin in the error. @throws UsageError */
  readonly check?: (label: string, text: string) => unknown;
}

/**
 * The backend settings, by flag name: what `--config` files hold, what the flags of `serve`, `exec`,
 * `ls` and `gc` set. Paths in a config file are relative to the file.
 */
const SETTINGS = {
  backend: { kind: 'string', env: 'WS_BACKEND' },
  workdir: { kind: 'path', backends: ['local', 'bwrap', 'docker'], env: 'WS_WORKDIR' },
  'workspace-id': { kind: 'string', env: 'WS_WORKSPACE_ID' },
  image: { kind: 'string', backends: ['docker', 'e2b', 'daytona', 'k8s', 'opensandbox'], env: 'WS_IMAGE' },
  volume: { kind: 'string', backends: ['docker'] },
  network: { kind: 'string', env: 'WS_NETWORK' },
  'network-allow': {
    kind: 'list',
    env: 'WS_NETWORK_ALLOW',
    check: (label, text) => parseAllowList(label, [text]),
  },
  cpus: { kind: 'number', env: 'WS_CPUS', check: (label, text) => parseLimit('cpus', label, text) },
  memory: { kind: 'number', env: 'WS_MEMORY', check: (label, text) => parseLimit('memory', label, text) },
  pids: { kind: 'number', env: 'WS_PIDS', check: (label, text) => parseLimit('pids', label, text) },
  disk: { kind: 'number', env: 'WS_DISK', check: (label, text) => parseLimit('disk', label, text) },
  privileges: { kind: 'string', env: 'WS_PRIVILEGES', check: parsePrivileges },
  user: { kind: 'string', env: 'WS_USER', check: parseUser },
  env: { kind: 'pairs' },
  'api-key': { kind: 'string', backends: ['e2b', 'daytona', 'opensandbox'] },
  'api-url': { kind: 'string', backends: ['e2b', 'daytona', 'opensandbox'] },
  namespace: { kind: 'string', backends: ['k8s'] },
  kubeconfig: { kind: 'path', backends: ['k8s'] },
  owner: { kind: 'string', backends: OWNER_TAGGED, env: 'WS_OWNER' },
  'mcp-config': { kind: 'path' },
  skill: { kind: 'paths' },
  'start-timeout': { kind: 'string' },
  root: { kind: 'paths', backends: ['local', 'bwrap'] },
} as const satisfies Record<string, SettingSpec>;

export type SettingName = keyof typeof SETTINGS;

/** Parsed flags as `parseArgs` gives them: a string, or strings for a repeatable flag. */
export type FlagValues = { readonly [Name in SettingName]?: string | string[] | undefined } & {
  readonly config?: string | undefined;
};

/** A backend and its options, from flags, then the environment, then the config file. */
export interface BackendSettings {
  readonly backend: BackendName;
  readonly workdir?: string | undefined;
  readonly workspaceId?: string | undefined;
  readonly image?: string | undefined;
  readonly volume?: string | undefined;
  /** `--cpus`, `--memory`, `--pids`, `--disk`: the limits set (undefined when none is). */
  readonly limits?: WorkspaceLimits | undefined;
  /** `--network none|full` or `--network-allow`: the common network policy. */
  readonly network?: NetworkPolicy | undefined;
  /** `--network NAME` other than none and full: a Docker network's name (docker only). */
  readonly networkName?: string | undefined;
  readonly privileges?: Privileges | undefined;
  /** `--user`: who commands run as (a backend that cannot switch users refuses it at open). */
  readonly user?: string | undefined;
  readonly env?: Record<string, string> | undefined;
  readonly apiKey?: string | undefined;
  readonly apiUrl?: string | undefined;
  readonly namespace?: string | undefined;
  readonly kubeconfig?: string | undefined;
  readonly owner?: string | undefined;
  readonly mcpConfig?: string | undefined;
  readonly skills?: readonly string[] | undefined;
  readonly roots?: readonly string[] | undefined;
  /** How long opening the workspace may take, in ms (default 5 minutes), and as it was written. */
  readonly startTimeoutMs: number;
  readonly startTimeout: string;
}

type Value = string | string[] | Record<string, string>;

/** A config file: settings for any backend at the top, and per backend under its name. */
interface ConfigFile {
  readonly top: Partial<Record<SettingName, Value>>;
  readonly sections: Partial<Record<BackendName, Partial<Record<SettingName, Value>>>>;
}

const applies = (name: SettingName, backend: BackendName): boolean => {
  const spec: SettingSpec = SETTINGS[name];
  return spec.backends === undefined || spec.backends.includes(backend);
};

/** Reads a `--config` / `WS_CONFIG` file. @throws UsageError naming the file and the problem. */
export function readConfigFile(path: string, origin: string): ConfigFile {
  const fail = (why: string) => new UsageError(`${origin} ${path}: ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw fail(code ?? `not JSON (${(error as Error).message.split('\n')[0]})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw fail('expected a JSON object of settings, such as {"backend": "docker", "image": "…"}');
  const base = dirname(resolve(path));
  const top: Partial<Record<SettingName, Value>> = {};
  const sections: Partial<Record<BackendName, Partial<Record<SettingName, Value>>>> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if ((BACKENDS as readonly string[]).includes(key)) {
      const backend = key as BackendName;
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw fail(`"${backend}" must be an object of settings for the ${backend} backend`);
      const section: Partial<Record<SettingName, Value>> = {};
      for (const [name, item] of Object.entries(value)) {
        const setting = checkName(name, fail, `"${backend}" holds`);
        if (setting === 'backend') throw fail(`"${backend}" cannot name another backend`);
        if (!applies(setting, backend)) throw fail(`"${name}" does not apply to the ${backend} backend`);
        section[setting] = checkValue(setting, item, base, fail);
        if (setting === 'network') checkNetwork(section.network as string, backend, fail);
      }
      sections[backend] = section;
    } else {
      const setting = checkName(key, fail, 'holds');
      top[setting] = checkValue(setting, value, base, fail);
    }
  }
  if (top.backend !== undefined && !(BACKENDS as readonly string[]).includes(top.backend as string))
    throw fail(`unknown backend ${JSON.stringify(top.backend)}; use one of ${BACKENDS.join(', ')}`);
  return { top, sections };
}

/** A network in a backend's section: a name only where the backend takes one. */
function checkNetwork(text: string, backend: BackendName, fail: (why: string) => UsageError): void {
  try {
    parseNetwork('"network"', text, backend);
  } catch (error) {
    if (error instanceof UsageError) throw fail(error.message);
    throw error;
  }
}

function checkName(name: string, fail: (why: string) => UsageError, where: string): SettingName {
  if (Object.hasOwn(SETTINGS, name)) return name as SettingName;
  throw fail(`${where} an unknown setting ${JSON.stringify(name)} (settings are the long flag names)`);
}

function checkValue(
  name: SettingName,
  value: unknown,
  base: string,
  fail: (why: string) => UsageError,
): Value {
  const spec: SettingSpec = SETTINGS[name];
  const kind = spec.kind;
  const strings = (item: unknown) => Array.isArray(item) && item.every((entry) => typeof entry === 'string');
  /** The setting's own check, its error naming the file and the key. */
  const checked = <T extends string | string[]>(texts: T): T => {
    try {
      for (const text of typeof texts === 'string' ? [texts] : texts) spec.check?.(`"${name}"`, text);
    } catch (error) {
      if (error instanceof UsageError) throw fail(error.message);
      throw error;
    }
    return texts;
  };
  switch (kind) {
    case 'string':
    case 'path':
      if (typeof value !== 'string' || value === '') throw fail(`"${name}" must be a non-empty string`);
      return kind === 'path' ? resolve(base, value) : checked(value);
    case 'number':
      if (typeof value === 'number') return checked(String(value));
      if (typeof value !== 'string' || value === '') throw fail(`"${name}" must be a number or a string`);
      return checked(value);
    case 'list':
      if (typeof value === 'string') return checked([value]);
      if (!strings(value) || (value as string[]).length === 0)
        throw fail(`"${name}" must be a string or a non-empty list of strings`);
      return checked(value as string[]);
    case 'paths':
      if (typeof value === 'string') return [resolve(base, value)];
      if (!strings(value)) throw fail(`"${name}" must be a path or a list of paths`);
      return (value as string[]).map((item) => resolve(base, item));
    case 'pairs':
      if (strings(value)) return value as string[];
      if (
        typeof value === 'object' &&
        value !== null &&
        Object.values(value).every((item) => typeof item === 'string')
      )
        return value as Record<string, string>;
      throw fail(`"${name}" must be {"KEY": "VALUE", …} or ["KEY=VALUE", …]`);
  }
}

/**
 * Resolves the backend and its settings before any other I/O (a config file is read). Each setting
 * comes from its flag, else its environment variable, else the config file's section of the chosen
 * backend, else the file's top level. A flag that does not apply to the chosen backend is refused; an
 * environment variable or a top-level setting that does not is ignored (they serve every backend).
 *
 * @param flags the parsed flags (`config` among them)
 * @throws UsageError for an unknown backend, a flag of another backend, a bad config file or value
 */
export function resolveSettings(flags: FlagValues, env: NodeJS.ProcessEnv = process.env): BackendSettings {
  const configPath = flags.config ?? (env.WS_CONFIG || undefined);
  const config = configPath
    ? readConfigFile(configPath, flags.config !== undefined ? '--config' : 'WS_CONFIG')
    : undefined;
  const backendText =
    (flags.backend as string | undefined) ?? env.WS_BACKEND ?? config?.top.backend ?? 'local';
  if (typeof backendText !== 'string' || !(BACKENDS as readonly string[]).includes(backendText)) {
    throw new UsageError(`unknown backend ${JSON.stringify(backendText)}; use one of ${BACKENDS.join(', ')}`);
  }
  const backend = backendText as BackendName;
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const spec: SettingSpec = SETTINGS[name];
    if (flags[name] !== undefined && !applies(name, backend)) {
      const only = spec.backends?.join(', ') ?? '';
      throw new UsageError(`--${name} does not apply to the ${backend} backend (only ${only})`);
    }
  }
  const section = config?.sections[backend] ?? {};
  /** The value and where it came from: 0 a flag, 1 the environment, 2 the config file. */
  const pick = (name: SettingName): { value: Value; rank: number } | undefined => {
    const spec: SettingSpec = SETTINGS[name];
    const flag = flags[name];
    if (flag !== undefined && !(Array.isArray(flag) && flag.length === 0)) return { value: flag, rank: 0 };
    if (!applies(name, backend)) return undefined;
    const fromEnv = spec.env ? env[spec.env] : undefined;
    if (fromEnv) return { value: fromEnv, rank: 1 };
    const fromFile = section[name] ?? config?.top[name];
    return fromFile === undefined ? undefined : { value: fromFile, rank: 2 };
  };
  const text = (name: SettingName): string | undefined => {
    const found = pick(name)?.value;
    return typeof found === 'string' ? found : undefined;
  };
  const list = (name: SettingName): string[] | undefined => {
    const found = pick(name)?.value;
    if (found === undefined) return undefined;
    return typeof found === 'string' ? [found] : (found as string[]);
  };

  let workdir = pick('workdir');
  let volume = pick('volume');
  if (workdir && volume) {
    if (workdir.rank === volume.rank) {
      throw new UsageError(
        workdir.rank === 0
          ? '--workdir and --volume exclude each other'
          : `${configPath ?? 'the config file'}: "workdir" and "volume" exclude each other`,
      );
    }
    // The one set closer to the command wins.
    if (workdir.rank < volume.rank) volume = undefined;
    else workdir = undefined;
  }
  const fileLabel = `${flags.config !== undefined ? '--config' : 'WS_CONFIG'} ${configPath ?? ''}`;
  /** Where a value of rank `rank` came from, for its errors. */
  const label = (name: SettingName, rank: number): string => {
    const spec: SettingSpec = SETTINGS[name];
    return rank === 0 ? `--${name}` : rank === 1 && spec.env ? spec.env : `${fileLabel}: "${name}"`;
  };

  let network = pick('network');
  let allow = pick('network-allow');
  if (network && allow) {
    if (network.rank === allow.rank) {
      throw new UsageError(
        network.rank === 2
          ? `${fileLabel}: "network" and "network-allow" exclude each other`
          : `${label('network', network.rank)} and ${label('network-allow', allow.rank)} exclude each other (an allow list is the network: drop ${label('network', network.rank)})`,
      );
    }
    if (network.rank < allow.rank) allow = undefined;
    else network = undefined;
  }
  const networkChoice = network
    ? parseNetwork(label('network', network.rank), network.value as string, backend)
    : undefined;
  const allowList = allow
    ? parseAllowList(
        label('network-allow', allow.rank),
        typeof allow.value === 'string' ? [allow.value] : (allow.value as string[]),
      )
    : undefined;
  const limits: Record<string, number> = {};
  for (const name of Object.keys(LIMIT_SETTINGS) as LimitSetting[]) {
    const found = pick(name);
    if (found)
      limits[LIMIT_SETTINGS[name].limit] = parseLimit(name, label(name, found.rank), found.value as string);
  }
  const privileges = pick('privileges');
  const user = pick('user');

  const startTimeout = text('start-timeout') ?? '5m';
  return {
    backend,
    workdir: workdir?.value as string | undefined,
    volume: volume?.value as string | undefined,
    workspaceId: text('workspace-id'),
    image: text('image'),
    limits: Object.keys(limits).length > 0 ? limits : undefined,
    network: allowList
      ? { allow: allowList }
      : networkChoice && 'network' in networkChoice
        ? networkChoice.network
        : undefined,
    networkName: networkChoice && 'networkName' in networkChoice ? networkChoice.networkName : undefined,
    privileges: privileges
      ? parsePrivileges(label('privileges', privileges.rank), privileges.value as string)
      : undefined,
    user: user ? parseUser(label('user', user.rank), user.value as string) : undefined,
    env: mergeEnv(section.env ?? config?.top.env, flags.env),
    apiKey: text('api-key'),
    apiUrl: text('api-url'),
    namespace: text('namespace'),
    kubeconfig: text('kubeconfig'),
    owner: text('owner'),
    mcpConfig: text('mcp-config'),
    skills: list('skill'),
    roots: list('root'),
    startTimeoutMs: parseDuration('start-timeout', startTimeout),
    startTimeout,
  };
}

/** The config file's variables, then the `--env` flags over them. */
function mergeEnv(
  fromFile: Value | undefined,
  fromFlags: FlagValues['env'],
): Record<string, string> | undefined {
  const file =
    fromFile === undefined
      ? undefined
      : Array.isArray(fromFile)
        ? parsePairs('env', fromFile)
        : typeof fromFile === 'string'
          ? parsePairs('env', [fromFile])
          : fromFile;
  const given = parsePairs('env', typeof fromFlags === 'string' ? [fromFlags] : fromFlags);
  if (!file && !given) return undefined;
  return { ...file, ...given };
}
