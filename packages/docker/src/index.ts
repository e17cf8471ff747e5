export type { DockerGatewayChannel } from './docker-gateway.js';
export { DEFAULT_DOCKER_IMAGE, DockerWorkspace, type DockerWorkspaceOptions } from './docker-workspace.js';
export { dockerProblem } from './engine-check.js';
export { type DockerWorkspacesOptions, dockerWorkspaces } from './factory.js';
export {
  type BuildDockerImageOptions,
  buildDockerImage,
  type DockerImageResult,
  type DockerImageSource,
  type EnsureDockerImageOptions,
} from './image-build.js';
export { DEFAULT_DOCKER_IMAGE_SOURCE, type DockerPullPolicy } from './image-pull.js';
export { type DockerGcOptions, dockerReaper, gcDocker, removeOwnedContainers } from './reap.js';
