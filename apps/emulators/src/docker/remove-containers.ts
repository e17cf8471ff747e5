import type Docker from 'dockerode';
import { jsonRecord, stringRecord } from '../http/http-util.js';
import { dockerStatus } from './exec.js';

/**
 * Force-removes the containers `filters` finds and resolves with the value of each one's `idLabel`
 * (its container id without one). With `createdWith`, only containers whose label `createdWith.label`
 * (a JSON object) holds every one of `createdWith.entries`. A container gone already, or being removed
 * by someone else right now, is skipped.
 */
export async function removeContainers(
  client: Docker,
  filters: { label: string[] },
  idLabel: string,
  createdWith?: { label: string; entries: Readonly<Record<string, string>> | undefined },
): Promise<string[]> {
  const containers = await client.listContainers({ all: true, filters });
  const wanted = Object.entries(createdWith?.entries ?? {});
  const removed: string[] = [];
  for (const summary of containers) {
    const created = stringRecord(jsonRecord(createdWith && summary.Labels?.[createdWith.label]));
    if (!wanted.every(([key, value]) => created[key] === value)) continue;
    try {
      await client.getContainer(summary.Id).remove({ force: true });
      removed.push(summary.Labels?.[idLabel] ?? summary.Id);
    } catch (error) {
      const status = dockerStatus(error);
      if (status !== 404 && status !== 409) throw error;
    }
  }
  return removed;
}
