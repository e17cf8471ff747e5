import { Attachments } from '../backend/attachments.js';
import type { ProviderSession } from '../backend/provider.js';
import type { BackendEvent } from '../contracts/events.js';
import type { Sandbox } from '../contracts/sandbox.js';
import type { CallOptions } from '../contracts/workspace.js';
import { readGatewayAsset } from './install.js';
import type { GatewayLink } from './link.js';
import { openRemoteGateway, type RemoteGatewayOptions } from './remote.js';

/** A remote backend's own sandbox (commands and files through the vendor's API) that can stop what it started. */
export interface RemoteDirectSandbox extends Sandbox {
  /** Kills the processes this object started in the sandbox. */
  killSpawned(): Promise<void>;
}

/** Options of {@link RemoteAttachment}. */
export interface RemoteAttachmentOptions<V> {
  /** The vendor's sandbox object (the SDK's), found, resumed or created by the provider. */
  readonly vendor: V;
  /** The backend's own sandbox over the vendor's API. */
  readonly direct: RemoteDirectSandbox;
  /** The workspace's folder inside the sandbox. */
  readonly workdir: string;
  /**
   * Where each workspace object attached to the sandbox keeps its record (see `Attachments`), and
   * after how many ms untouched a record belongs to a host that went away.
   */
  readonly records: {
    /** The folder inside the sandbox that holds the records, one file each. */
    readonly folder: string;
    /** How long a record may stay untouched before it counts as a host that went away, in milliseconds. */
    readonly staleMs: number;
  };
  /**
   * What keeps the sandbox alive while the workspace is open: `tick` runs every `everyMs` (its
   * failures ignored: a host that dies stops calling it), and this object's record is touched with it.
   */
  readonly keepAlive: {
    /** How often `tick` runs and the record is touched, in milliseconds. */
    readonly everyMs: number;
    /** Tells the vendor the sandbox is in use (renews its timeout, marks activity); a failure is ignored. */
    tick(vendor: V): Promise<unknown>;
  };
  /** How the gateway starts in this sandbox; false: calls go through `direct`. */
  readonly gateway: false | Omit<RemoteGatewayOptions, 'direct' | 'workdir' | 'bundle'>;
  /** The backend package's module URL (`import.meta.url`): its gateway bundle sits beside it. */
  readonly assetUrl: string;
}

/** Gateway bundles read so far, by the module URL they sit beside: read once per process. */
const BUNDLES = new Map<string, Promise<Uint8Array>>();

function bundleBeside(moduleUrl: string): Promise<Uint8Array> {
  let bytes = BUNDLES.get(moduleUrl);
  if (!bytes) {
    bytes = readGatewayAsset(moduleUrl);
    // A bundle missing now (not built yet) is looked for again next time.
    bytes.catch(() => BUNDLES.delete(moduleUrl));
    BUNDLES.set(moduleUrl, bytes);
  }
  return bytes;
}

/**
 * One workspace object's hold on a remote sandbox, the part every cloud backend shares: the gateway
 * link, this object's attachment record among the sandbox's users, and the keep-alive beat. The
 * provider keeps what is the vendor's: finding, creating and resuming the sandbox, and pausing,
 * stopping or killing it once {@link close} says no other object uses it.
 *
 * The keep-alive starts when it is made, so a provider holds it before anything is awaited: an open
 * that fails half-way is closed like any other.
 */
export class RemoteAttachment<V> {
  private readonly attachments: Attachments;
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  /**
   * Where the records are written while the workspace is open: the vendor's API, which needs no
   * gateway (the records are a line each, and the gateway may be starting or gone).
   */
  private records: Sandbox | undefined;
  private link: GatewayLink | undefined;

  /** Starts the keep-alive beat; does nothing else. */
  constructor(private readonly options: RemoteAttachmentOptions<V>) {
    this.attachments = new Attachments(options.records.folder, options.records.staleMs);
    this.keepAlive = setInterval(() => {
      void options.keepAlive.tick(options.vendor).catch(() => {});
      void this.attachments.touch(this.records).catch(() => {});
    }, options.keepAlive.everyMs);
    this.keepAlive.unref();
  }

  /** The vendor's sandbox object. */
  get vendor(): V {
    return this.options.vendor;
  }

  /** Milliseconds the gateway took to start and answer, once it did. */
  get gatewayStartMs(): number | undefined {
    return this.link?.startedMs;
  }

  /**
   * Sets up the gateway (unless turned off), which starts once the workspace is in use (see
   * `openRemoteGateway`; without node, calls go on through `direct` with a warning), and records this object among the sandbox's users; returns the provider's session.
   * @throws WsError what the gateway's start-up or the record's write throws.
   */
  async open(
    call: CallOptions & { readonly events?: ((event: BackendEvent) => void) | undefined },
    warnings: string[],
  ): Promise<ProviderSession> {
    const { direct, workdir, gateway, assetUrl } = this.options;
    let session: ProviderSession = { sandbox: direct, workdir, warnings };
    if (gateway !== false) {
      const opened = await openRemoteGateway(
        { ...gateway, direct, workdir, bundle: () => bundleBeside(assetUrl) },
        call,
        warnings,
      );
      this.link = opened.link;
      session = opened.session;
    }
    this.records = direct;
    await this.attachments.touch(this.records);
    return session;
  }

  /**
   * Stops the keep-alive, removes this object's record, stops the gateway (and the MCP servers it
   * runs) and kills the processes this object started. Returns true when another object's record is
   * fresh: the sandbox is still in use and must be left running.
   */
  async close(): Promise<boolean> {
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    const shared = await this.attachments.release(this.records);
    this.records = undefined;
    const link = this.link;
    this.link = undefined;
    await link?.stop().catch(() => {});
    await this.options.direct.killSpawned();
    return shared;
  }
}
