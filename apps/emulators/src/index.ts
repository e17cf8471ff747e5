export type { DaytonaEmulator, DaytonaEmulatorOptions } from './daytona/daytona-emulator.js';
export {
  DAYTONA_LABELS,
  DEFAULT_DAYTONA_API_KEY,
  removeDaytonaEmulatorSandboxes,
  startDaytonaEmulator,
} from './daytona/daytona-emulator.js';
export type { DaytonaLimits } from './daytona/limits.js';
export { DAYTONA_LIMITS } from './daytona/limits.js';
export {
  DEFAULT_DAYTONA_SNAPSHOTS,
  DEFAULT_E2B_TEMPLATES,
  DEFAULT_K8S_IMAGES,
  DEFAULT_OPENSANDBOX_IMAGES,
} from './default-images.js';
export type { E2BEmulator, E2BEmulatorOptions } from './e2b/e2b-emulator.js';
export {
  DEFAULT_E2B_API_KEY,
  EMULATED_ENVD_VERSION,
  removeEmulatorSandboxes,
  startE2BEmulator,
} from './e2b/e2b-emulator.js';
export type { EnvdDescriptors } from './e2b/envd-descriptors.js';
export { e2bBundlePath, loadEnvdDescriptors } from './e2b/envd-descriptors.js';
export { E2B_LABELS } from './e2b/labels.js';
export type { E2BLimits } from './e2b/limits.js';
export { E2B_LIMITS } from './e2b/limits.js';
export type { FaultMode, FaultProxy } from './fault-proxy.js';
export { freeLoopbackPort, startFaultProxy } from './fault-proxy.js';
export type { K8sEmulator, K8sEmulatorOptions, K8sKubeConfigOptions } from './k8s/k8s-emulator.js';
export {
  K8S_LABELS,
  removeK8sEmulatorObjects,
  startK8sEmulator,
} from './k8s/k8s-emulator.js';
export type { K8sLimits } from './k8s/limits.js';
export { K8S_LIMITS } from './k8s/limits.js';
export type { EmulatorProcess, LaunchEmulatorOptions } from './launch.js';
export { EMULATOR_BIN, launchEmulator } from './launch.js';
export type { LimitTable } from './limits.js';
export { LimitOptionError } from './limits.js';
export type { OpenSandboxLimits } from './opensandbox/limits.js';
export { OPENSANDBOX_LIMITS } from './opensandbox/limits.js';
export type { OpenSandboxEmulator, OpenSandboxEmulatorOptions } from './opensandbox/opensandbox-emulator.js';
export {
  DEFAULT_OPENSANDBOX_API_KEY,
  OPENSANDBOX_API_KEY_HEADER,
  OPENSANDBOX_LABELS,
  removeOpenSandboxEmulatorSandboxes,
  startOpenSandboxEmulator,
} from './opensandbox/opensandbox-emulator.js';
export type { EmulatorVendor } from './vendor-table.js';
