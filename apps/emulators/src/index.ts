export type { DaytonaEmulator, DaytonaEmulatorOptions } from './daytona/daytona-emulator.js';
export {
  DAYTONA_LABELS,
  DEFAULT_DAYTONA_API_KEY,
  DEFAULT_DAYTONA_SNAPSHOTS,
  removeDaytonaEmulatorSandboxes,
  startDaytonaEmulator,
} from './daytona/daytona-emulator.js';
export type { E2BEmulator, E2BEmulatorOptions } from './e2b/e2b-emulator.js';
export {
  DEFAULT_E2B_API_KEY,
  DEFAULT_E2B_TEMPLATES,
  EMULATED_ENVD_VERSION,
  removeEmulatorSandboxes,
  startE2BEmulator,
} from './e2b/e2b-emulator.js';
export type { EnvdDescriptors } from './e2b/envd-descriptors.js';
export { e2bBundlePath, loadEnvdDescriptors } from './e2b/envd-descriptors.js';
export { E2B_LABELS } from './e2b/labels.js';
export type { FaultMode, FaultProxy } from './fault-proxy.js';
export { freeLoopbackPort, startFaultProxy } from './fault-proxy.js';
export type { K8sEmulator, K8sEmulatorOptions, K8sKubeConfigOptions } from './k8s/k8s-emulator.js';
export {
  DEFAULT_K8S_IMAGES,
  K8S_LABELS,
  removeK8sEmulatorObjects,
  startK8sEmulator,
} from './k8s/k8s-emulator.js';
export type { EmulatorProcess, LaunchEmulatorOptions } from './launch.js';
export { EMULATOR_BIN, launchEmulator } from './launch.js';
export type { OpenSandboxEmulator, OpenSandboxEmulatorOptions } from './opensandbox/opensandbox-emulator.js';
export {
  DEFAULT_OPENSANDBOX_API_KEY,
  DEFAULT_OPENSANDBOX_IMAGES,
  OPENSANDBOX_API_KEY_HEADER,
  OPENSANDBOX_LABELS,
  removeOpenSandboxEmulatorSandboxes,
  startOpenSandboxEmulator,
} from './opensandbox/opensandbox-emulator.js';
export type { EmulatorVendor } from './vendor-table.js';
