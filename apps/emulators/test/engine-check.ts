import Docker from 'dockerode';

/** Why the emulator's Docker-backed tests cannot run here (no engine, or the image is missing), or undefined. */
export async function dockerProblem(
  image: string,
  docker: Docker = new Docker(),
): Promise<string | undefined> {
  try {
    await docker.ping();
  } catch (error) {
    return `no Docker engine answers (${(error as Error).message}); start dockerd`;
  }
  try {
    await docker.getImage(image).inspect();
  } catch {
    return `the image ${image} is missing; build it with \`npx ws-docker-image\` (package @ws/docker)`;
  }
  return undefined;
}
