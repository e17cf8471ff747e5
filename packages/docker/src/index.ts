export type { DockerGatewayChannel, DockerProviderOptions } from './docker-provider.js';
export { containerName, DockerProvider, dockerRuntimeDir, LABELS } from './docker-provider.js';
export { CONTAINER_WORKDIR, DockerSandbox } from './docker-sandbox.js';
export type { DockerWorkspaceOptions } from './docker-workspace.js';
export { DEFAULT_DOCKER_IMAGE, DockerWorkspace } from './docker-workspace.js';
export { dockerProblem } from './engine-check.js';
export { type DockerWorkspacesOptions, dockerWorkspaces } from './factory.js';
export type {
  BuildDockerImageOptions,
  DockerImageResult,
  DockerImageSource,
  EnsureDockerImageOptions,
} from './image-build.js';
export { buildDockerImage, DOCKER_IMAGE_DIR, missingImageHint } from './image-build.js';
export type { DockerGcOptions } from './reap.js';
export { dockerReaper, gcDocker, removeOwnedContainers } from './reap.js';
