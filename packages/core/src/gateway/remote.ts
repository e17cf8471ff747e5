import { completeSandbox } from '../backend/posix-fallbacks.js';
import type { ProviderSession } from '../backend/provider.js';
import { isWsError, WsError } from '../contracts/errors.js';
import type { BackendEvent } from '../contracts/events.js';
import type { Sandbox, SandboxProcess } from '../contracts/sandbox.js';
import type { CallOptions } from '../contracts/workspace.js';
import { GatewayMcpConnector } from './gateway-mcp.js';
import { DEFERRED_GATEWAY_START, GatewaySandbox } from './gateway-sandbox.js';
import { type ProvidedNode, provideNode } from './host-node.js';
import { installGateway, probeNode } from './install.js';
import { type GatewayLauncher, GatewayLink } from './link.js';
import {
  type GatewaySocketPlace,
  type ProxiedEndpoint,
  preparedLauncher,
  refusingLauncher,
  sandboxGatewayLauncher,
} from './start.js';

/** What {@link openRemoteGateway} needs from a backend whose sandbox is reached through a vendor's API. */
export interface RemoteGatewayOptions {
  /** The backend's own sandbox: commands and files through the vendor's API. */
  readonly direct: Sandbox;
  /** Starts one process in the sandbox with stdin, stdout and stderr piped (the gateway, over stdio). */
  start(argv: readonly string[]): Promise<SandboxProcess>;
  /** The folder inside the sandbox the gateway bundle is installed into. */
  readonly home: string;
  /** The workspace's folder inside the sandbox (commands' default working directory). */
  readonly workdir: string;
  /** The gateway bundle's bytes (the backend package's asset, see `readGatewayAsset`). */
  bundle(): Promise<Uint8Array>;
  /** What calls go through without the gateway, for the warning when it does not start ("envd"). */
  readonly via: string;
  /**
   * What happens without the gateway, appended to the reason when it cannot run ("commands and files
   * go through envd directly, and MCP servers cannot run").
   */
  readonly withoutGateway: string;
  /** The sandbox as messages name it (`the template base`, `the image python:3.11-slim`). */
  readonly describe: string;
  /**
   * How the vendor's own command API hands a command's output over: `bytes`, as they are, or `text`,
   * decoded as UTF-8 (bytes that are not UTF-8 are lost). With `bytes` the gateway starts once the
   * workspace is in use (see {@link DEFERRED_GATEWAY_START}) and every call goes through the vendor's
   * API until then. With `text` it starts at the opening, in the background: the vendor's native
   * file calls go direct while it starts, and commands (listings too, where they are commands) wait
   * for it, so that no command's output is decoded as text while a gateway can carry its bytes.
   */
  readonly directOutput: 'bytes' | 'text';
  /**
   * How the host reaches a port inside the sandbox (a vendor's reverse proxy). When given, the
   * gateway listens on a loopback port reached through it, and falls back to its command's streams
   * (with a warning) when that does not work.
   */
  endpoint?(port: number): Promise<ProxiedEndpoint>;
}

/** The session of {@link openRemoteGateway}, and the gateway's link (the backend stops it on close). */
export interface RemoteGatewaySession {
  /** The provider's session: through the gateway once it runs, else through the backend's own sandbox. */
  readonly session: ProviderSession;
  /** The gateway's launch. */
  readonly link: GatewayLink;
}

/** The node and bundle the gateway runs on, or why none can run there. */
type Prepared = { readonly node: string; readonly bundle: string } | { readonly problem: string };

/**
 * The one start-up of a remote backend's gateway, never waited for by the opening: it starts in the
 * background from the opening, or once the workspace is in use (see `directOutput` and
 * `DEFERRED_GATEWAY_START`), or at once for the first MCP server. Its first start probes the
 * sandbox's node (placing the host's own, uploaded once per sandbox, when it has none: see
 * `provideNode`) and installs the bundle; it then serves over a port the vendor proxies, or over the
 * streams of one long-lived command (`stdio`). Every call then goes through the gateway, and MCP
 * servers run behind it. When no node can run there, or the gateway does not start, calls go on
 * through `direct` and the reason is in the session's warnings and in the error of an MCP call.
 */
export async function openRemoteGateway(
  options: RemoteGatewayOptions,
  call: CallOptions & { readonly events?: ((event: BackendEvent) => void) | undefined },
  warnings: string[],
): Promise<RemoteGatewaySession> {
  const { direct, workdir } = options;
  const state: { noMcp: string | undefined; warned: boolean } = { noMcp: undefined, warned: false };
  const link = new GatewayLink(
    preparedLauncher(async ({ signal }) => {
      const prepared = await prepareGateway(options, signal ? { signal } : {});
      if ('node' in prepared) return remoteLauncher(options, prepared, warnings);
      state.noMcp = prepared.problem;
      warnings.push(`${prepared.problem}. Meanwhile ${options.withoutGateway}`);
      return refusingLauncher(
        new WsError(
          'CAPABILITY_UNSUPPORTED',
          `The ${direct.backend} workspace cannot run MCP servers: ${prepared.problem}`,
          { details: { backend: direct.backend, reason: prepared.problem } },
        ),
      );
    }),
    call.events,
  );
  const failed = (error: unknown) => {
    // No node: said once already, with what happens meanwhile.
    if (state.warned || state.noMcp !== undefined || (isWsError(error) && error.code === 'DISPOSED')) return;
    state.warned = true;
    warnings.push(
      `The gateway did not start, so calls go through ${options.via} directly (it is tried again later): ${(error as Error).message}`,
    );
  };
  let sandbox: GatewaySandbox;
  if (options.directOutput === 'bytes') {
    sandbox = new GatewaySandbox({
      direct,
      link,
      routeExec: true,
      deferStart: { ...DEFERRED_GATEWAY_START, failed },
    });
  } else {
    sandbox = new GatewaySandbox({ direct, link, routeExec: true, awaitStart: 'commands' });
    link.start().catch(failed);
  }
  return {
    session: {
      sandbox,
      workdir,
      mcp: new GatewayMcpConnector(link),
      warnings,
      get noMcp() {
        return state.noMcp;
      },
    },
    link,
  };
}

/** Probes the sandbox's node (placing the host's when it has none) while the bundle goes in beside it. */
async function prepareGateway(options: RemoteGatewayOptions, call: CallOptions): Promise<Prepared> {
  const complete = completeSandbox(options.direct);
  // The bundle goes in while the node is looked for: two round trips to the vendor side by side. A
  // sandbox without node gets it all the same (a file of a few hundred kilobytes, then unused).
  const installing = options
    .bundle()
    .then((bytes) => installGateway(complete, options.home, bytes, call))
    .then(
      (path) => ({ path }),
      (error: unknown) => ({ error }),
    );
  const probed = await probeNode(complete, call).catch(async (error: unknown) => {
    await installing;
    throw error;
  });
  const node = await provideNode(complete, probed, {
    ...call,
    home: options.home,
    describe: options.describe,
  }).catch((error: unknown): ProvidedNode => {
    if (call.signal?.aborted) throw error;
    return {
      problem: `${options.describe} has no node 18 or newer, and placing this host's node there failed: ${(error as Error).message}`,
    };
  });
  const installed = await installing;
  if (node.path === undefined) return { problem: node.problem };
  if ('error' in installed) throw installed.error;
  return { node: node.path, bundle: installed.path };
}

/**
 * Launches the gateway on what {@link prepareGateway} found: on a proxied port when the backend has a
 * proxy, falling back for good (with a warning) to a command's streams when that fails.
 */
function remoteLauncher(
  options: RemoteGatewayOptions,
  prepared: { readonly node: string; readonly bundle: string },
  warnings: string[],
): GatewayLauncher {
  const launchers = new Map<GatewaySocketPlace['kind'], GatewayLauncher>();
  let current: GatewayLauncher | undefined;
  let proxy = options.endpoint;
  const launcher = (socket: GatewaySocketPlace) => {
    let found = launchers.get(socket.kind);
    if (!found) {
      found = sandboxGatewayLauncher({
        start: (argv) => options.start(argv),
        node: prepared.node,
        bundle: prepared.bundle,
        workdir: options.workdir,
        socket,
      });
      launchers.set(socket.kind, found);
    }
    current = found;
    return found;
  };
  return {
    async launch(secrets, launchOptions) {
      if (proxy) {
        const endpoint = proxy;
        try {
          return await launcher({ kind: 'proxied', endpoint: (port) => endpoint(port) }).launch(
            secrets,
            launchOptions,
          );
        } catch (error) {
          if (launchOptions.signal?.aborted) throw error;
          proxy = undefined;
          warnings.push(
            `The gateway could not be reached through the sandbox's port proxy, so it runs over a command's streams (each call costs a ${options.via} command): ${(error as Error).message}`,
          );
        }
      }
      return launcher({ kind: 'stdio' }).launch(secrets, launchOptions);
    },
    logTail: async () => (current ? current.logTail() : ''),
  };
}
