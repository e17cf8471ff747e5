export { type K8sWorkspacesOptions, k8sWorkspaces } from './factory.js';
export { K8sWorkspace, type K8sWorkspaceOptions } from './k8s-workspace.js';
export { gcK8s, type K8sGcOptions, k8sReaper } from './reap.js';
