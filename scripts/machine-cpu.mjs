import { readFileSync } from 'node:fs';

/**
 * The whole machine's CPU time so far in milliseconds (every core, every process: user, nice, system,
 * interrupts), from /proc/stat; undefined where there is none. Between two readings it is what ran
 * in between cost, when nothing else runs (VITEST_MAX_WORKERS=1).
 */
export function machineCpuMs() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8')
      .split('\n', 1)[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const [user, nice, system, , , irq, softirq, steal] = fields;
    return ((user + nice + system + irq + softirq + steal) * 1000) / 100;
  } catch {
    return undefined;
  }
}
