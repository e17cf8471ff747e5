import type Docker from 'dockerode';
import { isRecord } from '../http/http-util.js';
import { dockerMessage } from './exec.js';
import { firstFileOfTar, tarOneFile } from './tar.js';

// Container labels cannot change, so what an emulator changes after creation (settings, end times)
// is kept in a small JSON file in the container, written and read through the archive API, which
// works on stopped and paused containers too.
const STATE_DIR = '/run';

/** Records `value` as `/run/<file>` in the container; a failure is logged, not thrown. */
export async function writeStateFile(
  container: Docker.Container,
  file: string,
  value: unknown,
  log: (line: string) => void,
): Promise<void> {
  try {
    await container.putArchive(tarOneFile(file, Buffer.from(JSON.stringify(value)), 0o600), {
      path: STATE_DIR,
    });
  } catch (error) {
    log(`cannot record ${STATE_DIR}/${file} in container ${container.id}: ${dockerMessage(error)}`);
  }
}

/** The JSON object recorded as `/run/<file>` in the container, or undefined when there is none. */
export async function readStateFile(
  container: Docker.Container,
  file: string,
): Promise<Record<string, unknown> | undefined> {
  try {
    const archive = await container.getArchive({ path: `${STATE_DIR}/${file}` });
    const content = await firstFileOfTar(archive as unknown as AsyncIterable<Uint8Array>);
    if (!content) return undefined;
    const value = JSON.parse(content.toString('utf8')) as unknown;
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
