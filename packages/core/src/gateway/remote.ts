import { completeSandbox } from '../backend/posix-fallbacks.js';
import type { ProviderSession } from '../backend/provider.js';
import type { Sandbox, SandboxProcess } from '../contracts/sandbox.js';
import type { CallOptions } from '../contracts/workspace.js';
import { GatewayMcpConnector } from './gateway-mcp.js';
import { GatewaySandbox } from './gateway-sandbox.js';
import { type ProvidedNode, provideNode } from './host-node.js';
import { installGateway, probeNode } from './install.js';
import { GatewayLink } from './link.js';
import { type GatewaySocketPlace, type ProxiedEndpoint, sandboxGatewayLauncher } from './start.js';

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
   * How the host reaches a port inside the sandbox (a vendor's reverse proxy). When given, the
   * gateway listens on a loopback port reached through it, and falls back to its command's streams
   * (with a warning) when that does not work.
   */
  endpoint?(port: number): Promise<ProxiedEndpoint>;
}

/** The session of {@link openRemoteGateway}, and the gateway's link when it runs (the backend stops it on close). */
export interface RemoteGatewaySession {
  /** The provider's session: through the gateway when it runs, else through the backend's own sandbox. */
  readonly session: ProviderSession;
  /** The gateway's launch, when it runs. */
  readonly link: GatewayLink | undefined;
}

/**
 * The one start-up of a remote backend's gateway: probes the sandbox's node (placing the host's own,
 * uploaded once per sandbox, when it has none: see `provideNode`), installs the bundle, and starts
 * the gateway over the streams of one long-lived command (`stdio`). Every call then goes through the
 * gateway, and MCP servers run behind it. When no node can run there, or the gateway does not start,
 * calls go through `direct` and the reason is in the session's warnings and in the error of an MCP call.
 */
export async function openRemoteGateway(
  options: RemoteGatewayOptions,
  call: CallOptions,
  warnings: string[],
): Promise<RemoteGatewaySession> {
  const { direct, workdir } = options;
  const complete = completeSandbox(direct);
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
  if (node.path === undefined) {
    const reason = `${node.problem}. Meanwhile ${options.withoutGateway}`;
    warnings.push(reason);
    return { session: { sandbox: direct, workdir, warnings, noMcp: node.problem }, link: undefined };
  }
  if ('error' in installed) throw installed.error;
  const bundle = installed.path;
  const launcher = (socket: GatewaySocketPlace) =>
    new GatewayLink(
      sandboxGatewayLauncher({
        start: (argv) => options.start(argv),
        node: node.path,
        bundle,
        workdir,
        socket,
      }),
    );
  let link: GatewayLink | undefined;
  // Waited for: every call goes through it from the first (a call through the vendor's API costs more).
  if (options.endpoint) {
    const endpoint = options.endpoint;
    const proxied = launcher({ kind: 'proxied', endpoint: (port) => endpoint(port) });
    try {
      await proxied.start(call);
      link = proxied;
    } catch (error) {
      await proxied.stop().catch(() => {});
      if (call.signal?.aborted) throw error;
      warnings.push(
        `The gateway could not be reached through the sandbox's port proxy, so it runs over a command's streams (each call costs a ${options.via} command): ${(error as Error).message}`,
      );
    }
  }
  if (!link) {
    link = launcher({ kind: 'stdio' });
    await link.start(call).catch((error: unknown) => {
      warnings.push(
        `The gateway did not start, so calls go through ${options.via} directly: ${(error as Error).message}`,
      );
    });
  }
  return {
    session: {
      sandbox: new GatewaySandbox({ direct, link, routeExec: true }),
      workdir,
      mcp: new GatewayMcpConnector(link),
      warnings,
    },
    link,
  };
}
