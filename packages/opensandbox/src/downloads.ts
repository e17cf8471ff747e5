// File downloads from execd that can be cut: the SDK's download stream never cancels its response
// body when its reader stops early, and an unread body holds its request open (and the SDK's close,
// which waits for every request to finish).
import {
  type AdapterFactory,
  type ConnectionConfig,
  createDefaultAdapterFactory,
} from '@alibaba-group/opensandbox';

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** The path execd serves file downloads under. */
const DOWNLOAD_PATH = '/files/download';

/**
 * The downloads of the sandboxes opened with {@link adapterFactory}: each response body is passed
 * through a stream of this object's, which {@link start} hands to its caller to cancel and
 * {@link cancelAll} cancels when the sandbox is let go.
 */
export class Downloads {
  private readonly open = new Set<() => void>();
  private claim: ((cancel: () => void) => void) | undefined;
  /** What the sandboxes are opened with: the SDK's own adapters, their downloads through here. */
  readonly adapterFactory: AdapterFactory;

  constructor() {
    const factory = createDefaultAdapterFactory();
    this.adapterFactory = {
      createLifecycleStack: (options) => factory.createLifecycleStack(options),
      createEgressStack: (options) => factory.createEgressStack(options),
      createExecdStack: (options) =>
        factory.createExecdStack({
          ...options,
          connectionConfig: this.through(options.connectionConfig),
        }),
    };
  }

  /**
   * Runs `start`, which begins one download before it returns (the SDK calls its fetch in the first
   * step of the download's iterator), and returns what cancels that download. A download `start` did
   * not begin there is cancelled by {@link cancelAll} only.
   */
  start<T>(start: () => T): { started: T; cancel: () => void } {
    // Claimed once the download's response arrives; until then there is nothing to cancel.
    let cancel: () => void = () => {};
    this.claim = (found) => {
      cancel = found;
    };
    try {
      return { started: start(), cancel: () => cancel() };
    } finally {
      this.claim = undefined;
    }
  }

  /** Cancels every download still open (their requests end, and with them the SDK's close). */
  cancelAll(): void {
    for (const cancel of [...this.open]) cancel();
  }

  /** `connection`, its fetch passing download bodies through this object. */
  private through(connection: ConnectionConfig): ConnectionConfig {
    const original = connection.fetch as Fetch;
    const fetch: Fetch = (input, init) => {
      const claim = this.claim;
      this.claim = undefined;
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const response = original(input, init);
      if (!new URL(url).pathname.endsWith(DOWNLOAD_PATH)) return response;
      return response.then((answer) => this.cuttable(answer, claim));
    };
    // The connection's other members (headers, the SSE fetch, its transport) are its own.
    return Object.create(connection, { fetch: { value: fetch } }) as ConnectionConfig;
  }

  /** `response` with a body that `claim` (and {@link cancelAll}) can cancel, which ends its request. */
  private cuttable(response: Response, claim: ((cancel: () => void) => void) | undefined): Response {
    const source = response.body;
    if (!source) return response;
    const reader = source.getReader();
    let cancelled = false;
    const cancel = () => {
      this.open.delete(cancel);
      if (cancelled) return;
      cancelled = true;
      void reader.cancel().catch(() => {});
    };
    this.open.add(cancel);
    claim?.(cancel);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            cancel();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          cancel();
          controller.error(error);
        }
      },
      cancel: () => cancel(),
    });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
}
