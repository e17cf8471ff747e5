import type Docker from 'dockerode';
import { readStateFile, writeStateFile } from '../docker/state-file.js';
import { stringRecord } from '../http/http-util.js';

/** Labels of an emulated OpenSandbox sandbox's container; with a small state file they hold all its state. */
export const OPENSANDBOX_LABELS = {
  /** Marks an emulated OpenSandbox sandbox's container; its value is `opensandbox`. */
  emulator: 'ws.emulator',
  /** Which emulator instance manages the sandbox (see `OpenSandboxEmulatorOptions.instance`). */
  instance: 'ws.opensandbox.instance',
  /** The sandbox's id. */
  sandboxId: 'ws.opensandbox.sandbox-id',
  /** The image URI of the create request (before mapping through `images`). */
  image: 'ws.opensandbox.image',
  /** The entrypoint, as JSON. */
  entrypoint: 'ws.opensandbox.entrypoint',
  /** When the sandbox was created, as an ISO timestamp. */
  createdAt: 'ws.opensandbox.created-at',
  /** The metadata given at creation, as JSON (later changes live in the state file). */
  metadata: 'ws.opensandbox.metadata',
  /** The expiry given at creation, ISO (empty: none; renewals live in the state file). */
  expiresAt: 'ws.opensandbox.expires-at',
  /** With `secureAccess`, the `X-EXECD-ACCESS-TOKEN` execd requires (empty: none). */
  accessToken: 'ws.opensandbox.access-token',
  /** The create request's `networkPolicy`, as JSON (recorded: the emulator filters no destinations). */
  networkPolicy: 'ws.opensandbox.network-policy',
} as const;

/** The value of the `ws.emulator` label on OpenSandbox sandbox containers. */
export const OPENSANDBOX_EMULATOR_LABEL_VALUE = 'opensandbox';

/** The label filter of every emulated OpenSandbox sandbox's container, or of one instance's. */
export function openSandboxFilter(instance?: string): { label: string[] } {
  const label = [`${OPENSANDBOX_LABELS.emulator}=${OPENSANDBOX_EMULATOR_LABEL_VALUE}`];
  if (instance !== undefined) label.push(`${OPENSANDBOX_LABELS.instance}=${instance}`);
  return { label };
}

/** What a sandbox is from its creation on. */
export interface SandboxDescription {
  id: string;
  image: string;
  entrypoint: string[];
  createdAt: Date;
  /** The token execd requires in `X-EXECD-ACCESS-TOKEN` (`secureAccess`), or undefined. */
  accessToken: string | undefined;
}

/** What changes after creation (kept in the state file). */
export interface SandboxSettings {
  metadata: Record<string, string>;
  /** ISO instant, or null for a sandbox that never expires. */
  expiresAt: string | null;
}

export function labelsOf(
  description: SandboxDescription,
  settings: SandboxSettings,
  instance: string,
): Record<string, string> {
  return {
    [OPENSANDBOX_LABELS.emulator]: OPENSANDBOX_EMULATOR_LABEL_VALUE,
    [OPENSANDBOX_LABELS.instance]: instance,
    [OPENSANDBOX_LABELS.sandboxId]: description.id,
    [OPENSANDBOX_LABELS.image]: description.image,
    [OPENSANDBOX_LABELS.entrypoint]: JSON.stringify(description.entrypoint),
    [OPENSANDBOX_LABELS.createdAt]: description.createdAt.toISOString(),
    [OPENSANDBOX_LABELS.metadata]: JSON.stringify(settings.metadata),
    [OPENSANDBOX_LABELS.expiresAt]: settings.expiresAt ?? '',
    [OPENSANDBOX_LABELS.accessToken]: description.accessToken ?? '',
  };
}

function parseJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? 'null') as unknown;
  } catch {
    return undefined;
  }
}

/** A sandbox's description and creation settings from its container's labels (undefined without an id). */
export function describedBy(
  summary: Docker.ContainerInfo,
): { description: SandboxDescription; settings: SandboxSettings } | undefined {
  const labels = summary.Labels ?? {};
  const id = labels[OPENSANDBOX_LABELS.sandboxId];
  if (!id) return undefined;
  const entrypoint = parseJson(labels[OPENSANDBOX_LABELS.entrypoint]);
  const createdAt = new Date(labels[OPENSANDBOX_LABELS.createdAt] ?? summary.Created * 1000);
  return {
    description: {
      id,
      image: labels[OPENSANDBOX_LABELS.image] ?? summary.Image,
      entrypoint: Array.isArray(entrypoint) ? entrypoint.map(String) : [],
      createdAt: Number.isNaN(createdAt.getTime()) ? new Date(summary.Created * 1000) : createdAt,
      accessToken: labels[OPENSANDBOX_LABELS.accessToken] || undefined,
    },
    settings: {
      metadata: stringRecord(parseJson(labels[OPENSANDBOX_LABELS.metadata])),
      expiresAt: labels[OPENSANDBOX_LABELS.expiresAt] || null,
    },
  };
}

const STATE_FILE = 'ws-opensandbox-emulator.json';

/** Records a sandbox's settings in its container; a failure is logged, not thrown. */
export function writeSettings(
  container: Docker.Container,
  settings: SandboxSettings,
  log: (line: string) => void,
): Promise<void> {
  return writeStateFile(container, STATE_FILE, settings, log);
}

/** The settings recorded in a container, or `fallback` when it has none. */
export async function readSettings(
  container: Docker.Container,
  fallback: SandboxSettings,
): Promise<SandboxSettings> {
  const saved = await readStateFile(container, STATE_FILE);
  if (!saved) return fallback;
  return {
    metadata: 'metadata' in saved ? stringRecord(saved.metadata) : fallback.metadata,
    expiresAt:
      typeof saved.expiresAt === 'string' || saved.expiresAt === null ? saved.expiresAt : fallback.expiresAt,
  };
}
