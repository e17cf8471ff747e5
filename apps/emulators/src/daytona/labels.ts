import type Docker from 'dockerode';
import { readStateFile, writeStateFile } from '../docker/state-file.js';
import { jsonRecord, stringRecord } from '../http/http-util.js';

/** Labels of an emulated Daytona sandbox's container; with a small state file they hold all its state. */
export const DAYTONA_LABELS = {
  /** Marks an emulated Daytona sandbox's container; its value is `daytona`. */
  emulator: 'ws.emulator',
  /** Which emulator instance manages the sandbox (see `DaytonaEmulatorOptions.instance`). */
  instance: 'ws.daytona.instance',
  /** The sandbox's id. */
  sandboxId: 'ws.daytona.sandbox-id',
  /** The sandbox's name. */
  name: 'ws.daytona.name',
  /** The snapshot (image) the sandbox was created from. */
  snapshot: 'ws.daytona.snapshot',
  /** The OS user the sandbox's commands and file operations run as. */
  user: 'ws.daytona.user',
  /** The region the sandbox was created in (`us` when none was given). */
  target: 'ws.daytona.target',
  /** `true` when the sandbox has no network (`networkBlockAll`). */
  networkBlockAll: 'ws.daytona.network-block-all',
  /** `networkAllowList` and `domainAllowList` as given at creation, as JSON. */
  allowLists: 'ws.daytona.allow-lists',
  /** The sandbox's CPUs, memory in GiB and disk in GiB, as JSON. */
  resources: 'ws.daytona.resources',
  /** When the sandbox was created, as an ISO timestamp. */
  createdAt: 'ws.daytona.created-at',
  /** The Daytona labels given at creation, as JSON (later changes live in the state file). */
  labels: 'ws.daytona.labels',
  /** The sandbox's env vars, as JSON. */
  env: 'ws.daytona.env',
  /** The settings given at creation, as JSON (later changes live in the state file). */
  settings: 'ws.daytona.settings',
} as const;

/** The value of the `ws.emulator` label on Daytona sandbox containers. */
export const DAYTONA_EMULATOR_LABEL_VALUE = 'daytona';

/** The label filter of every emulated Daytona sandbox's container, or of one instance's. */
export function daytonaFilter(instance?: string): { label: string[] } {
  const label = [`${DAYTONA_LABELS.emulator}=${DAYTONA_EMULATOR_LABEL_VALUE}`];
  if (instance !== undefined) label.push(`${DAYTONA_LABELS.instance}=${instance}`);
  return { label };
}

/** What a sandbox is from its creation on (its container's labels). */
export interface SandboxDescription {
  id: string;
  name: string;
  snapshot: string;
  user: string;
  target: string;
  networkBlockAll: boolean;
  /** Comma-separated CIDR blocks; empty: none given. */
  networkAllowList: string;
  /** Comma-separated domains; empty: none given. */
  domainAllowList: string;
  cpu: number;
  memory: number;
  disk: number;
  createdAt: Date;
  labels: Record<string, string>;
  env: Record<string, string>;
}

/** What changes after creation (the state file). */
export interface SandboxSettings {
  labels: Record<string, string>;
  autoStopInterval: number;
  autoArchiveInterval: number;
  autoDeleteInterval: number;
  autoPauseInterval: number;
  archived: boolean;
  lastActivityAt: string;
  updatedAt: string;
}

/** Daytona's defaults: auto-stop after 15 minutes, auto-archive after 7 days, no auto-delete. */
export function defaultSettings(labels: Record<string, string>): SandboxSettings {
  const now = new Date().toISOString();
  return {
    labels: { ...labels },
    autoStopInterval: 15,
    autoArchiveInterval: 10080,
    autoDeleteInterval: -1,
    autoPauseInterval: 0,
    archived: false,
    lastActivityAt: now,
    updatedAt: now,
  };
}

export function labelsOf(
  description: SandboxDescription,
  instance: string,
  settings: SandboxSettings,
): Record<string, string> {
  return {
    [DAYTONA_LABELS.settings]: JSON.stringify(settings),
    [DAYTONA_LABELS.emulator]: DAYTONA_EMULATOR_LABEL_VALUE,
    [DAYTONA_LABELS.instance]: instance,
    [DAYTONA_LABELS.sandboxId]: description.id,
    [DAYTONA_LABELS.name]: description.name,
    [DAYTONA_LABELS.snapshot]: description.snapshot,
    [DAYTONA_LABELS.user]: description.user,
    [DAYTONA_LABELS.target]: description.target,
    [DAYTONA_LABELS.networkBlockAll]: String(description.networkBlockAll),
    [DAYTONA_LABELS.allowLists]: JSON.stringify({
      networkAllowList: description.networkAllowList,
      domainAllowList: description.domainAllowList,
    }),
    [DAYTONA_LABELS.resources]: JSON.stringify({
      cpu: description.cpu,
      memory: description.memory,
      disk: description.disk,
    }),
    [DAYTONA_LABELS.createdAt]: description.createdAt.toISOString(),
    [DAYTONA_LABELS.labels]: JSON.stringify(description.labels),
    [DAYTONA_LABELS.env]: JSON.stringify(description.env),
  };
}

/** A sandbox's description from its container's labels (undefined without a sandbox id). */
export function describedBy(summary: Docker.ContainerInfo): SandboxDescription | undefined {
  const labels = summary.Labels ?? {};
  const id = labels[DAYTONA_LABELS.sandboxId];
  if (!id) return undefined;
  const resources = jsonRecord(labels[DAYTONA_LABELS.resources]);
  const allowLists = stringRecord(jsonRecord(labels[DAYTONA_LABELS.allowLists]));
  const createdAt = new Date(labels[DAYTONA_LABELS.createdAt] ?? summary.Created * 1000);
  return {
    id,
    name: labels[DAYTONA_LABELS.name] || id,
    snapshot: labels[DAYTONA_LABELS.snapshot] ?? summary.Image,
    user: labels[DAYTONA_LABELS.user] || 'root',
    target: labels[DAYTONA_LABELS.target] || 'us',
    networkBlockAll: labels[DAYTONA_LABELS.networkBlockAll] === 'true',
    networkAllowList: allowLists.networkAllowList ?? '',
    domainAllowList: allowLists.domainAllowList ?? '',
    cpu: Number(resources.cpu) || 1,
    memory: Number(resources.memory) || 1,
    disk: Number(resources.disk) || 3,
    createdAt: Number.isNaN(createdAt.getTime()) ? new Date(summary.Created * 1000) : createdAt,
    labels: stringRecord(jsonRecord(labels[DAYTONA_LABELS.labels])),
    env: stringRecord(jsonRecord(labels[DAYTONA_LABELS.env])),
  };
}

const STATE_FILE = 'ws-daytona-emulator.json';

/** Records a sandbox's settings in its container; a failure is logged, not thrown. */
export function writeSettings(
  container: Docker.Container,
  settings: SandboxSettings,
  log: (line: string) => void,
): Promise<void> {
  return writeStateFile(container, STATE_FILE, settings, log);
}

/**
 * The settings recorded in a container (its state file once they changed, else the label of its
 * creation), over `fallback` field by field.
 */
export async function readSettings(
  container: Docker.Container,
  summary: Docker.ContainerInfo,
  fallback: SandboxSettings,
): Promise<SandboxSettings> {
  const saved =
    (await readStateFile(container, STATE_FILE)) ?? jsonRecord(summary.Labels?.[DAYTONA_LABELS.settings]);
  const number = (value: unknown, otherwise: number) =>
    typeof value === 'number' && Number.isInteger(value) ? value : otherwise;
  return {
    labels: typeof saved.labels === 'object' ? stringRecord(saved.labels) : fallback.labels,
    autoStopInterval: number(saved.autoStopInterval, fallback.autoStopInterval),
    autoArchiveInterval: number(saved.autoArchiveInterval, fallback.autoArchiveInterval),
    autoDeleteInterval: number(saved.autoDeleteInterval, fallback.autoDeleteInterval),
    autoPauseInterval: number(saved.autoPauseInterval, fallback.autoPauseInterval),
    archived: saved.archived === true,
    lastActivityAt: typeof saved.lastActivityAt === 'string' ? saved.lastActivityAt : fallback.lastActivityAt,
    updatedAt: typeof saved.updatedAt === 'string' ? saved.updatedAt : fallback.updatedAt,
  };
}
