export type { DaytonaConnection } from './client.js';
export type { DaytonaProviderOptions, DaytonaResources } from './daytona-provider.js';
export { DAYTONA_WORKDIR, DaytonaProvider, DEFAULT_DAYTONA_TIMEOUT_MS } from './daytona-provider.js';
export { DaytonaSandbox } from './daytona-sandbox.js';
export type { DaytonaWorkspaceOptions } from './daytona-workspace.js';
export { DaytonaWorkspace } from './daytona-workspace.js';
export { translateDaytonaError } from './errors.js';
export { deleteOwnedSandboxes, LABELS } from './sandbox-lifecycle.js';
