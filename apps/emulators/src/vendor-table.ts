import { DAYTONA_LIMITS } from './daytona/limits.js';
import {
  DEFAULT_DAYTONA_SNAPSHOTS,
  DEFAULT_E2B_TEMPLATES,
  DEFAULT_K8S_IMAGES,
  DEFAULT_OPENSANDBOX_IMAGES,
} from './default-images.js';
import { E2B_LIMITS } from './e2b/limits.js';
import { K8S_LIMITS } from './k8s/limits.js';
import type { LimitTable } from './limits.js';
import { OPENSANDBOX_LIMITS } from './opensandbox/limits.js';

/** The vendors `ws-emulator` serves. */
export type EmulatorVendor = 'e2b' | 'daytona' | 'k8s' | 'opensandbox';

/** The options that map names to images; an emulator takes one of them. */
export const IMAGE_OPTIONS = ['template', 'snapshot', 'image'] as const;
export type ImageOption = (typeof IMAGE_OPTIONS)[number];

/** The other options that not every emulator takes. */
export type VendorOption = 'public-port' | 'api-key' | 'token' | 'kubeconfig';

/** What `ws-emulator` hands an emulator it starts; only the options the emulator takes are set. */
export interface VendorStartOptions {
  port: number;
  instance?: string;
  network?: boolean;
  publicPort?: number;
  onLog: (line: string) => void;
  apiKeys?: readonly string[];
  /** The names mapped to images on the command line (`--template`, `--snapshot` or `--image`). */
  images: Record<string, string>;
  token?: string;
  kubeconfigPath?: string;
  /** `--limit NAME=VALUE` pairs, names checked against the entry's `limits`. */
  limits?: Record<string, number>;
}

/** A running emulator, as `ws-emulator` sees it. */
export interface StartedEmulator {
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * One vendor: how `ws-emulator` describes, checks and starts its emulator, and what that emulator
 * prints. Adding a vendor is one entry here (and its name in `EmulatorVendor`).
 */
export interface VendorEntry {
  /** Its arguments in the usage lines of `ws-emulator --help`. */
  readonly synopsis: string;
  /** Its part of `ws-emulator --help`; the first entry's also describes the options every emulator takes. */
  readonly help: string;
  /** The variables it prints once it listens, all of which `launchEmulator` waits for. */
  readonly envKeys: readonly string[];
  /** Its option mapping names to images, and what a refused `NAME=IMAGE` calls the name. */
  readonly images: { readonly option: ImageOption; readonly name: 'ID' | 'NAME' };
  /** The options of {@link VendorOption} it takes. */
  readonly options: readonly VendorOption[];
  /** Options of other emulators it refuses by naming its own (`--api-key`: use `--token`). */
  readonly instead?: Readonly<Partial<Record<VendorOption, VendorOption>>>;
  /** The vendor's limits the emulator enforces, with the real service's defaults (`--limit` changes them). */
  readonly limits: LimitTable;
  /** Starts it; the emulator's module is loaded only then, so the help and the checks load none. */
  start(options: VendorStartOptions): Promise<StartedEmulator>;
}

/** `NAME=IMAGE, …` of a default map, for the usage text. */
function pairs(map: Readonly<Record<string, string>>): string {
  return Object.entries(map)
    .map(([name, image]) => `${name}=${image}`)
    .join(', ');
}

export const VENDOR_TABLE: Readonly<Record<EmulatorVendor, VendorEntry>> = {
  e2b: {
    synopsis:
      '[--port N] [--template ID=IMAGE]... [--api-key KEY]... [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]',
    help: `Runs an emulator of E2B's API (control plane and envd) on 127.0.0.1, backed by Docker containers
(labelled ws.emulator=e2b and its instance; sandboxes left by an earlier run of the same instance are
taken over), until SIGINT or SIGTERM.
The unmodified e2b SDK uses it with the environment it prints:

  export E2B_API_URL=http://127.0.0.1:PORT
  export E2B_SANDBOX_URL=http://127.0.0.1:PORT
  export E2B_API_KEY=KEY

  --port N              the port (default: a free one)
  --template ID=IMAGE   a template ID and the image its sandboxes run (repeatable; default:
                        ${pairs(DEFAULT_E2B_TEMPLATES)}); an image the engine has also works as a template ID
  --api-key KEY         accept only this X-API-KEY (repeatable; default: any non-empty key)
  --instance NAME       whose sandboxes these are (default: default); emulators of other instances on
                        the same engine leave them alone
  --no-network          sandboxes get no network at all, only their own loopback, whatever they ask
                        for (they start sooner; for suites that never use the network from inside)
  --quiet               no request log on stderr
  --until-stdin-ends    stop also when standard input ends (run from a parent that may die
                        without stopping it: the parent holds the other end of a pipe)
  -h, --help            show this help`,
    envKeys: ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY'],
    images: { option: 'template', name: 'ID' },
    options: ['api-key'],
    limits: E2B_LIMITS,
    start: async ({ images, ...options }) =>
      (await import('./e2b/e2b-emulator.js')).startE2BEmulator({ ...options, templates: images }),
  },
  daytona: {
    synopsis:
      '[--port N] [--public-port N] [--snapshot NAME=IMAGE]... [--api-key KEY]... [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]',
    help: `The daytona emulator serves Daytona's control plane (under /api) and every sandbox's toolbox (under
/toolbox/<id>); the unmodified @daytonaio/sdk uses it with

  export DAYTONA_API_URL=http://127.0.0.1:PORT/api
  export DAYTONA_API_KEY=KEY

  --snapshot NAME=IMAGE a snapshot name and the image its sandboxes run (repeatable; default:
                        ${pairs(DEFAULT_DAYTONA_SNAPSHOTS)}; the first is the default snapshot); an image the engine has
                        also works as a snapshot name
  --api-key KEY         accept only this bearer key (repeatable; default: any non-empty key)
  --public-port N       the port clients reach it on, through a proxy on 127.0.0.1 in front of it:
                        the URLs it hands out (its own, every toolbox's) name it (opensandbox too)`,
    envKeys: ['DAYTONA_API_URL', 'DAYTONA_API_KEY'],
    images: { option: 'snapshot', name: 'NAME' },
    options: ['public-port', 'api-key'],
    limits: DAYTONA_LIMITS,
    start: async ({ images, ...options }) =>
      (await import('./daytona/daytona-emulator.js')).startDaytonaEmulator({ ...options, snapshots: images }),
  },
  k8s: {
    synopsis:
      '[--port N] [--image NAME=IMAGE]... [--token TOKEN] [--kubeconfig PATH] [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]',
    help: `The k8s emulator serves the Kubernetes API subset a workspace uses (namespaces, pods as containers,
persistent volume claims as named volumes, pod exec over WebSocket) and writes a kubeconfig for
@kubernetes/client-node's KubeConfig.loadFromDefault():

  export KUBECONFIG=PATH
  export K8S_API_URL=http://127.0.0.1:PORT
  export K8S_TOKEN=TOKEN

  --image NAME=IMAGE    a pod image name and the engine image it runs (repeatable; default:
                        ${pairs(DEFAULT_K8S_IMAGES)}); other names run as they are
  --token TOKEN         the only bearer token accepted (default: a random one)
  --kubeconfig PATH     where to write the kubeconfig (default: a temporary file removed on exit)`,
    envKeys: ['KUBECONFIG', 'K8S_API_URL', 'K8S_TOKEN'],
    images: { option: 'image', name: 'NAME' },
    options: ['token', 'kubeconfig'],
    instead: { 'api-key': 'token' },
    limits: K8S_LIMITS,
    start: async (options) => (await import('./k8s/k8s-emulator.js')).startK8sEmulator(options),
  },
  opensandbox: {
    synopsis:
      '[--port N] [--public-port N] [--image URI=IMAGE]... [--api-key KEY]... [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]',
    help: `The opensandbox emulator serves OpenSandbox's lifecycle API (under /v1) and every sandbox's execd;
the unmodified @alibaba-group/opensandbox SDK uses it with

  export OPEN_SANDBOX_DOMAIN=http://127.0.0.1:PORT
  export OPEN_SANDBOX_API_KEY=KEY

  --image URI=IMAGE     an image URI and the engine image it runs (repeatable; default:
                        ${pairs(DEFAULT_OPENSANDBOX_IMAGES)}); an image the engine has also works
  --api-key KEY         accept only this OPEN-SANDBOX-API-KEY (repeatable; default: any non-empty key)`,
    envKeys: ['OPEN_SANDBOX_DOMAIN', 'OPEN_SANDBOX_API_KEY'],
    images: { option: 'image', name: 'NAME' },
    options: ['public-port', 'api-key'],
    limits: OPENSANDBOX_LIMITS,
    start: async (options) =>
      (await import('./opensandbox/opensandbox-emulator.js')).startOpenSandboxEmulator(options),
  },
};

/** The vendors in the table's order (the order `ws-emulator` names them in). */
export const EMULATOR_VENDORS = Object.keys(VENDOR_TABLE) as EmulatorVendor[];
