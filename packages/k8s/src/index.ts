export { DEFAULT_K8S_REQUEST_TIMEOUT_MS } from './api.js';
export { type K8sWorkspacesOptions, k8sWorkspaces } from './factory.js';
export {
  DEFAULT_K8S_IMAGE,
  DEFAULT_K8S_START_TIMEOUT_MS,
  K8sWorkspace,
  type K8sWorkspaceOptions,
} from './k8s-workspace.js';
export { gcK8s, type K8sGcOptions, k8sReaper } from './reap.js';
