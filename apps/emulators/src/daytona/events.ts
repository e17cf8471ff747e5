import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';

/** The path of the event stream under the API (`<apiUrl>/socket.io/`). */
export const EVENTS_PATH = '/socket.io/';

const PING_INTERVAL_MS = 25_000;
const PING_TIMEOUT_MS = 20_000;

/**
 * The SDK's sandbox event stream: just enough Socket.IO (protocol 5 over Engine.IO 4, WebSocket transport
 * only) for `socket.io-client` to connect to the default namespace with `auth: {token}` and receive
 * `sandbox.created` and `sandbox.state.updated` events, so its wait loops wake on a state change instead
 * of their one-second poll.
 */
export class EventStream {
  private readonly clients = new Set<WebSocket>();

  constructor(
    private readonly webSockets: WebSocketServer,
    /** Whether a connect packet's `auth.token` is an accepted API key. */
    private readonly authorized: (token: string | undefined) => boolean,
  ) {}

  /** Takes over an upgrade request for the event stream. */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.webSockets.handleUpgrade(request, socket, head, (webSocket) => this.accept(webSocket));
  }

  /** Sends an event to every connected client. */
  emit(event: string, data: unknown): void {
    const packet = `42${JSON.stringify([event, data])}`;
    for (const client of this.clients) client.send(packet);
  }

  close(): void {
    for (const client of this.clients) client.terminate();
    this.clients.clear();
  }

  private accept(webSocket: WebSocket): void {
    const sid = randomBytes(10).toString('base64url');
    webSocket.send(
      `0${JSON.stringify({ sid, upgrades: [], pingInterval: PING_INTERVAL_MS, pingTimeout: PING_TIMEOUT_MS, maxPayload: 1e6 })}`,
    );
    const ping = setInterval(() => webSocket.send('2'), PING_INTERVAL_MS);
    ping.unref();
    const drop = () => {
      clearInterval(ping);
      this.clients.delete(webSocket);
    };
    webSocket.on('close', drop);
    webSocket.on('error', drop);
    webSocket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      if (text.startsWith('40')) {
        // CONNECT to the default namespace; the payload is the client's `auth`.
        let token: string | undefined;
        try {
          const auth = JSON.parse(text.slice(2) || '{}') as { token?: unknown };
          token = typeof auth.token === 'string' ? auth.token : undefined;
        } catch {
          token = undefined;
        }
        if (!this.authorized(token)) {
          webSocket.send(`44${JSON.stringify({ message: 'Unauthorized' })}`);
          return;
        }
        this.clients.add(webSocket);
        webSocket.send(`40${JSON.stringify({ sid: randomBytes(10).toString('base64url') })}`);
      } else if (text === '41') {
        this.clients.delete(webSocket); // DISCONNECT from the namespace
      } else if (text === '1') {
        webSocket.close(); // Engine.IO close
      }
      // '3' (pong) needs no answer.
    });
  }
}
