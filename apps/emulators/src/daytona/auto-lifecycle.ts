import type { SandboxRecord } from './sandbox-registry.js';

/** What an idle or stopped sandbox's intervals do next, and when (epoch ms). */
export interface AutoAction {
  at: number;
  action: 'stop' | 'archive' | 'delete';
}

/**
 * The next automatic change of a sandbox, as Daytona's intervals (in minutes of `minuteMs`) make it:
 * a started one stops `autoStopInterval` after its last activity (0: never); a stopped one is archived
 * `autoArchiveInterval` after it stopped (0: never), and a stopped or archived one deleted
 * `autoDeleteInterval` after (-1: never, 0: at once).
 */
export function nextAutoAction(record: SandboxRecord, minuteMs: number): AutoAction | undefined {
  const { autoStopInterval, autoArchiveInterval, autoDeleteInterval, lastActivityAt } = record.settings;
  if (record.state === 'started') {
    if (autoStopInterval <= 0) return undefined;
    return { at: Date.parse(lastActivityAt) + autoStopInterval * minuteMs, action: 'stop' };
  }
  if (record.state !== 'stopped' && record.state !== 'archived') return undefined;
  let due: AutoAction | undefined;
  if (autoDeleteInterval >= 0)
    due = { at: record.stateSince + autoDeleteInterval * minuteMs, action: 'delete' };
  const archiveAt = record.stateSince + autoArchiveInterval * minuteMs;
  if (record.state === 'stopped' && autoArchiveInterval > 0 && (!due || archiveAt < due.at))
    due = { at: archiveAt, action: 'archive' };
  return due;
}
