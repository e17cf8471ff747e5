import Docker from 'dockerode';
import { LABELS } from './docker-provider.js';

/**
 * Force-removes every workspace container carrying the owner tag `owner` (the `owner` option of
 * `DockerWorkspace`), running or not, and returns their names. Files in bind mounts and volumes stay.
 */
export async function removeOwnedContainers(
  owner: string,
  docker: Docker | Docker.DockerOptions = new Docker(),
): Promise<string[]> {
  const client = docker instanceof Docker ? docker : new Docker(docker);
  const found = await client.listContainers({
    all: true,
    filters: { label: [`${LABELS.workspace}=true`, `${LABELS.owner}=${owner}`] },
  });
  await Promise.all(
    found.map((info) =>
      client
        .getContainer(info.Id)
        .remove({ force: true })
        .catch((error: { statusCode?: number }) => {
          // Another process may have removed it meanwhile.
          if (error?.statusCode !== 404 && error?.statusCode !== 409) throw error;
        }),
    ),
  );
  return found.map((info) => (info.Names[0] ?? info.Id).replace(/^\//, ''));
}
