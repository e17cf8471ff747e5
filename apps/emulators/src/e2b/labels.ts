import type Docker from 'dockerode';
import { readStateFile, writeStateFile } from '../docker/state-file.js';
import type { EgressRules } from './egress.js';

/** Labels of an emulated E2B sandbox's container; the emulator's whole state survives in them. */
export const E2B_LABELS = {
  /** Marks an emulated E2B sandbox's container; its value is `e2b`. */
  emulator: 'ws.emulator',
  /** The sandbox's id. */
  sandboxId: 'ws.e2b.sandbox-id',
  /** The id of the template the sandbox was created from. */
  template: 'ws.e2b.template',
  /** The template's alias (empty: none). */
  alias: 'ws.e2b.alias',
  /** When the sandbox started, as an ISO timestamp. */
  startedAt: 'ws.e2b.started-at',
  /** The sandbox's end time set at creation, as an ISO timestamp (later changes live in the state file). */
  endAt: 'ws.e2b.end-at',
  /** The token envd requires of requests to the sandbox. */
  envdAccessToken: 'ws.e2b.envd-access-token',
  /** `true` when the sandbox is paused rather than killed at its end. */
  autoPause: 'ws.e2b.auto-pause',
  /** `true` when the create request asked for `autoResume.enabled`. */
  autoResume: 'ws.e2b.auto-resume',
  /** `allow_internet_access` as given at creation: `true`, `false`, or empty when not given. */
  allowInternetAccess: 'ws.e2b.allow-internet-access',
  /** The egress rules given at creation (`network.allowOut`, `network.denyOut`), as JSON. */
  network: 'ws.e2b.network',
  /** The prefix of the labels that hold the sandbox's metadata, one label per key. */
  metadataPrefix: 'ws.e2b.metadata.',
  /** Which emulator instance manages the sandbox (see `E2BEmulatorOptions.instance`). */
  instance: 'ws.e2b.instance',
} as const;

/** The value of the `ws.emulator` label on E2B sandbox containers. */
export const E2B_EMULATOR_LABEL_VALUE = 'e2b';

/** The label filter that finds every emulated E2B sandbox's container. */
export const E2B_CONTAINER_FILTER = { label: [`${E2B_LABELS.emulator}=${E2B_EMULATOR_LABEL_VALUE}`] };

/** The label filter that finds the containers of one emulator instance. */
export function instanceFilter(instance: string): { label: string[] } {
  return { label: [...E2B_CONTAINER_FILTER.label, `${E2B_LABELS.instance}=${instance}`] };
}

/** What E2B reports about a sandbox that is not in its container itself. */
export interface SandboxDescription {
  sandboxId: string;
  templateId: string;
  alias: string | undefined;
  metadata: Record<string, string>;
  startedAt: Date;
  endAt: Date;
  envdAccessToken: string;
  autoPause: boolean;
  autoResume: boolean;
  allowInternetAccess: boolean | null;
  egress: EgressRules | undefined;
}

export function labelsOf(description: SandboxDescription, instance: string): Record<string, string> {
  const labels: Record<string, string> = {
    [E2B_LABELS.emulator]: E2B_EMULATOR_LABEL_VALUE,
    [E2B_LABELS.instance]: instance,
    [E2B_LABELS.sandboxId]: description.sandboxId,
    [E2B_LABELS.template]: description.templateId,
    [E2B_LABELS.alias]: description.alias ?? '',
    [E2B_LABELS.startedAt]: description.startedAt.toISOString(),
    [E2B_LABELS.endAt]: description.endAt.toISOString(),
    [E2B_LABELS.envdAccessToken]: description.envdAccessToken,
    [E2B_LABELS.autoPause]: String(description.autoPause),
    [E2B_LABELS.autoResume]: String(description.autoResume),
    [E2B_LABELS.allowInternetAccess]:
      description.allowInternetAccess === null ? '' : String(description.allowInternetAccess),
    [E2B_LABELS.network]: description.egress ? JSON.stringify(description.egress) : '',
  };
  for (const [key, value] of Object.entries(description.metadata)) {
    labels[`${E2B_LABELS.metadataPrefix}${key}`] = value;
  }
  return labels;
}

/** A sandbox's description from its container's labels (undefined without a sandbox id). */
export function describedBy(summary: Docker.ContainerInfo): SandboxDescription | undefined {
  const labels = summary.Labels ?? {};
  const sandboxId = labels[E2B_LABELS.sandboxId];
  if (!sandboxId) return undefined;
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels)) {
    if (key.startsWith(E2B_LABELS.metadataPrefix))
      metadata[key.slice(E2B_LABELS.metadataPrefix.length)] = value;
  }
  const allowInternet = labels[E2B_LABELS.allowInternetAccess];
  return {
    sandboxId,
    templateId: labels[E2B_LABELS.template] ?? summary.Image,
    alias: labels[E2B_LABELS.alias] || undefined,
    metadata,
    startedAt: dateOr(labels[E2B_LABELS.startedAt], new Date(summary.Created * 1000)),
    endAt: dateOr(labels[E2B_LABELS.endAt], new Date()),
    envdAccessToken: labels[E2B_LABELS.envdAccessToken] ?? '',
    autoPause: labels[E2B_LABELS.autoPause] === 'true',
    autoResume: labels[E2B_LABELS.autoResume] === 'true',
    allowInternetAccess:
      allowInternet === undefined || allowInternet === '' ? null : allowInternet === 'true',
    egress: egressOf(labels[E2B_LABELS.network]),
  };
}

// Labels cannot change, so the end time that setTimeout/connect move is also kept in a small file in the
// container (written through the archive API, which works on paused containers too).
const STATE_FILE = 'ws-e2b-emulator.json';

/** Records a sandbox's current end time in its container; a failure is logged, not thrown. */
export function writeEndAt(
  container: Docker.Container,
  endAt: Date,
  log: (line: string) => void,
): Promise<void> {
  return writeStateFile(container, STATE_FILE, { endAt: endAt.toISOString() }, log);
}

/** The end time recorded in a container, if any. */
export async function readEndAt(container: Docker.Container): Promise<Date | undefined> {
  const saved = await readStateFile(container, STATE_FILE);
  return typeof saved?.endAt === 'string' ? dateOr(saved.endAt, undefined) : undefined;
}

function egressOf(text: string | undefined): EgressRules | undefined {
  if (!text) return undefined;
  try {
    const { allowOut, denyOut } = JSON.parse(text) as Partial<EgressRules>;
    return {
      allowOut: Array.isArray(allowOut) ? allowOut : [],
      denyOut: Array.isArray(denyOut) ? denyOut : [],
    };
  } catch {
    return undefined;
  }
}

function dateOr<T extends Date | undefined>(value: string | undefined, fallback: T): Date | T {
  if (!value) return fallback;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? fallback : date;
}
