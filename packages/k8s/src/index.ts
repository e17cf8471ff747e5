export { DEFAULT_K8S_REQUEST_TIMEOUT_MS } from './api.js';
export { httpCode, type K8sStatus, statusOf, translateK8sError } from './errors.js';
export { type K8sWorkspacesOptions, k8sWorkspaces } from './factory.js';
export { CLOSE_CAPABLE_PROTOCOL } from './k8s-exec.js';
export { CONTAINER_NAME } from './k8s-objects.js';
export type { K8sProviderOptions } from './k8s-provider.js';
export { K8sProvider } from './k8s-provider.js';
export { K8sSandbox, POD_WORKDIR } from './k8s-sandbox.js';
export type { K8sWorkspaceOptions } from './k8s-workspace.js';
export { DEFAULT_K8S_IMAGE, DEFAULT_K8S_TIMEOUT_MS, K8sWorkspace } from './k8s-workspace.js';
export {
  ANNOTATIONS,
  belongsTo,
  LABELS,
  MANAGED_BY,
  objectName,
  workspaceKey,
  workspaceSelector,
} from './names.js';
export type { K8sGcOptions } from './reap.js';
export { gcK8s, k8sReaper } from './reap.js';
