import type { ServerResponse } from 'node:http';
import type { StreamEventBody } from './wire-types.js';

/** One execd stream event (`specs/execd-api.yaml` ServerStreamEvent). */
export interface ExecdEvent {
  type: 'init' | 'stdout' | 'stderr' | 'ping' | 'execution_complete' | 'error';
  text?: string;
  execution_time?: number;
  error?: { ename: string; evalue: string; traceback: string[] };
}

/** execd keeps a quiet stream alive with a `ping` event this often. */
export const PING_INTERVAL_MS = 3000;

/**
 * An execd event stream: `Content-Type: text/event-stream`, but each event is a bare JSON object followed
 * by a blank line, with no `data:` prefix (execd's `writeSingleEvent`); a `ping` goes out after every 3 s
 * without another event.
 */
export class EventStreamWriter {
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly pingIntervalMs = PING_INTERVAL_MS,
  ) {
    response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    response.flushHeaders();
    response.once('close', () => this.stop());
    this.arm();
  }

  /** False once the client is gone or the stream has ended. */
  get open(): boolean {
    return !this.ended && !this.response.destroyed;
  }

  send(event: ExecdEvent): void {
    if (!this.open) return;
    const body: StreamEventBody = { ...event, timestamp: Date.now() };
    this.response.write(`${JSON.stringify(body)}\n\n`);
    this.arm();
  }

  end(): void {
    this.stop();
    if (!this.response.writableEnded) this.response.end();
  }

  private stop(): void {
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    if (!this.open) return;
    this.timer = setTimeout(() => this.send({ type: 'ping', text: 'pong' }), this.pingIntervalMs);
  }
}
