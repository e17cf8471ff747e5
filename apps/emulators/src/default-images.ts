// The images each emulator maps its vendor's names to by default, apart from the emulators
// themselves, so that `ws-emulator --help` and an argument check load none of them.

/** Pod images of a default emulator: the workspace image of @ws/docker, as itself. */
export const DEFAULT_K8S_IMAGES: Readonly<Record<string, string>> = {
  'ws-workspace:bookworm': 'ws-workspace:bookworm',
};

/** Image URIs a default emulator maps: `ws-workspace` is the workspace image of @ws/docker. */
export const DEFAULT_OPENSANDBOX_IMAGES: Readonly<Record<string, string>> = {
  'ws-workspace': 'ws-workspace:bookworm',
};

/** Snapshots of a default emulator: `default` is the workspace image of @ws/docker. */
export const DEFAULT_DAYTONA_SNAPSHOTS: Readonly<Record<string, string>> = {
  default: 'ws-workspace:bookworm',
};

/** Templates of a default emulator: E2B's `base` is the workspace image of @ws/docker. */
export const DEFAULT_E2B_TEMPLATES: Readonly<Record<string, string>> = { base: 'ws-workspace:bookworm' };
