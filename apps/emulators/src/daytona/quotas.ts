import { DaytonaHttpError } from './errors.js';
import type { DaytonaLimits } from './limits.js';
import type { SandboxRecord, SandboxState } from './sandbox-registry.js';

/** States whose CPU and memory count against the organization's totals. */
const COMPUTE: ReadonlySet<SandboxState> = new Set(['creating', 'starting', 'started', 'stopping']);
/** States whose disk counts (archived and destroyed ones hold none). */
const DISK: ReadonlySet<SandboxState> = new Set([...COMPUTE, 'stopped', 'archiving']);

const PER_SANDBOX_HINT = 'Contact support@daytona.io to increase the limits.';
const TIER_HINT = 'To increase the limits, upgrade your tier (the emulator sets them with --limit).';

/** The resources a sandbox asks for, in vCPUs and GiB. */
export interface SandboxResources {
  cpu: number;
  memory: number;
  disk: number;
}

/** The per-sandbox quotas, checked as the API checks a create request: 400 past one. */
export function checkPerSandbox(limits: DaytonaLimits, { cpu, memory, disk }: SandboxResources): void {
  if (cpu > limits.cpuPerSandbox)
    throw new DaytonaHttpError(
      400,
      `CPU request ${cpu} exceeds maximum allowed per sandbox (${limits.cpuPerSandbox}).\n${PER_SANDBOX_HINT}`,
    );
  if (memory > limits.memoryPerSandboxGiB)
    throw new DaytonaHttpError(
      400,
      `Memory request ${memory}GB exceeds maximum allowed per sandbox (${limits.memoryPerSandboxGiB}GB).\n${PER_SANDBOX_HINT}`,
    );
  if (disk > limits.diskPerSandboxGiB)
    throw new DaytonaHttpError(
      400,
      `Disk request ${disk}GB exceeds maximum allowed per sandbox (${limits.diskPerSandboxGiB}GB).\n${PER_SANDBOX_HINT}`,
    );
}

/**
 * The organization's totals with `wanted` added to what the other sandboxes use (`except` is the one
 * being started): 400 `Total … limit exceeded` past one, as the API answers a create or a start.
 */
export function checkTotals(
  limits: DaytonaLimits,
  sandboxes: readonly SandboxRecord[],
  wanted: SandboxResources,
  except?: string,
): void {
  const used = { cpu: wanted.cpu, memory: wanted.memory, disk: wanted.disk };
  for (const record of sandboxes) {
    if (record.id === except) continue;
    if (COMPUTE.has(record.state)) {
      used.cpu += record.cpu;
      used.memory += record.memory;
    }
    if (DISK.has(record.state)) used.disk += record.disk;
  }
  if (used.cpu > limits.totalCpu)
    throw new DaytonaHttpError(
      400,
      `Total CPU limit exceeded. Maximum allowed: ${limits.totalCpu}.\n${TIER_HINT}`,
    );
  if (used.memory > limits.totalMemoryGiB)
    throw new DaytonaHttpError(
      400,
      `Total memory limit exceeded. Maximum allowed: ${limits.totalMemoryGiB}GiB.\n${TIER_HINT}`,
    );
  if (used.disk > limits.totalDiskGiB)
    throw new DaytonaHttpError(
      400,
      `Total disk limit exceeded. Maximum allowed: ${limits.totalDiskGiB}GiB.\nConsider archiving your unused sandboxes to free up available storage.\n${TIER_HINT}`,
    );
}
