// One workspace's events: to its `onEvent` listener, to stderr under `DEBUG=ws:*`, and as OpenTelemetry
// spans around tool calls and commands. Nothing is wrapped when nobody listens.
import { isWsError } from '../contracts/errors.js';
import type {
  BackendEvent,
  EngineEvent,
  WorkspaceEvent,
  WorkspaceEventLevel,
  WorkspaceEventListener,
} from '../contracts/events.js';
import type { McpClient } from '../contracts/mcp.js';
import type {
  CompleteSandbox,
  ExecOptions,
  ExecResult,
  ReadFileOptions,
  ReadStreamOptions,
  SandboxProcess,
  SpawnOptions,
  WriteOptions,
} from '../contracts/sandbox.js';
import type { Tool, ToolCallOptions, ToolResult } from '../contracts/tool.js';
import { anyDebugEnabled, debugEnabled, debugLine } from './debug-log.js';
import { inSpan, tracingOn } from './tracing.js';

/** What a backend calls to report an event (see `ProviderOpenOptions.events`). */
export type BackendEventSink = (event: BackendEvent) => void;

type Emitted = BackendEvent | EngineEvent;

const LEVELS: Partial<Record<Emitted['type'], WorkspaceEventLevel>> = {
  'workspace.opened': 'info',
  'workspace.open_failed': 'warn',
  'workspace.closed': 'info',
  'workspace.destroyed': 'info',
  'sandbox.created': 'info',
  'sandbox.reattached': 'info',
  'gateway.started': 'info',
  'gateway.failed': 'warn',
  'gateway.down': 'warn',
  'image.progress': 'info',
  retry: 'warn',
  warning: 'warn',
};

const ms = (value: number) => `${Math.round(value)} ms`;

/** The line a person reads for an event. */
function describe(event: Emitted): string {
  switch (event.type) {
    case 'workspace.opened':
      return `opened in ${ms(event.durationMs)} (workdir ${event.workdir})`;
    case 'workspace.open_failed':
      return `opening failed after ${ms(event.durationMs)}: ${event.error}`;
    case 'workspace.closed':
      return `closed in ${ms(event.durationMs)}`;
    case 'workspace.destroyed':
      return `destroyed in ${ms(event.durationMs)}`;
    case 'sandbox.created':
      return `created sandbox${event.sandboxId ? ` ${event.sandboxId}` : ''} in ${ms(event.durationMs)}`;
    case 'sandbox.reattached':
      return `re-attached to sandbox${event.sandboxId ? ` ${event.sandboxId}` : ''} in ${ms(event.durationMs)}`;
    case 'gateway.started':
      return `gateway ${event.restart ? 'restarted' : 'started'} in ${ms(event.durationMs)} (launch ${event.generation})`;
    case 'gateway.failed':
      return `gateway did not start: ${event.error}`;
    case 'gateway.down':
      return `gateway down (${event.reason}); it restarts on the next call${event.logTail ? `\nlog tail:\n${event.logTail}` : ''}`;
    case 'image.progress':
      return `${event.image}: ${event.progress}`;
    case 'retry':
      return `try ${event.attempt} failed, again in ${ms(event.delayMs)}: ${event.error}`;
    case 'warning':
      return event.warning;
    case 'command.started':
      return `${event.spawned ? 'spawn' : 'exec'} ${event.command}`;
    case 'command.ended':
      return `${event.command} ${event.timedOut ? 'timed out' : `exit ${event.exitCode}`} in ${ms(event.durationMs)} (stdout ${event.stdoutBytes} B, stderr ${event.stderrBytes} B)`;
    case 'command.failed':
      return `${event.command} could not run (${ms(event.durationMs)}): ${event.error}`;
    case 'file.read':
      return `read ${event.path} (${event.bytes} B) in ${ms(event.durationMs)}`;
    case 'file.written':
      return `wrote ${event.path} (${event.bytes} B) in ${ms(event.durationMs)}`;
    case 'tool.started':
      return `${event.tool} called${event.toolCallId ? ` (${event.toolCallId})` : ''}`;
    case 'tool.ended':
      return `${event.tool} ${event.error ? `threw: ${event.error}` : event.isError ? 'returned an error' : 'returned'} in ${ms(event.durationMs)}`;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function errorType(error: unknown): string {
  if (isWsError(error)) return error.code;
  return error instanceof Error ? error.name : 'Error';
}

/** The program a command runs, without its arguments (which may hold secrets). */
function programOf(argv: readonly string[]): string {
  return argv[0] ?? '';
}

function byteLength(data: Uint8Array | string): number {
  return typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
}

/**
 * One workspace's observer: `emit` hands an event to the listener and to `DEBUG`; `sandbox` and
 * `tools` wrap what the engine hands out so that commands, file bytes and tool calls are reported
 * and traced. All of it is a no-op (nothing wrapped) while nobody observes.
 */
export class WorkspaceObserver {
  private listenerFailed = false;

  constructor(
    private readonly identity: { readonly workspaceId: string; readonly backend: string },
    private readonly listener: WorkspaceEventListener | undefined,
  ) {}

  /** Whether anything observes: a listener, `DEBUG` naming a `ws:` namespace, or a registered OpenTelemetry tracer provider. */
  get active(): boolean {
    return this.listener !== undefined || anyDebugEnabled() || tracingOn();
  }

  /** Whether events (not spans) go anywhere. */
  private get listening(): boolean {
    return this.listener !== undefined || anyDebugEnabled();
  }

  /** Reports an event. */
  readonly emit = (event: Emitted): void => {
    if (!this.listening) return;
    const level = LEVELS[event.type] ?? 'debug';
    const message = describe(event);
    const full = {
      time: Date.now(),
      workspaceId: this.identity.workspaceId,
      backend: this.identity.backend,
      level,
      message,
      ...event,
    } as WorkspaceEvent;
    const namespace = `ws:${event.type.split('.')[0]}`;
    if (debugEnabled(namespace))
      debugLine(namespace, `[${this.identity.backend} ${this.identity.workspaceId.slice(0, 8)}] ${message}`);
    if (!this.listener) return;
    try {
      this.listener(full);
    } catch (error) {
      // Once per workspace: a listener that always throws would otherwise drown the output.
      if (this.listenerFailed) return;
      this.listenerFailed = true;
      process.emitWarning(
        `A workspace's onEvent listener threw on ${event.type} (its later failures in this workspace are not reported): ${errorText(error)}`,
        'WorkspaceEventListenerError',
      );
    }
  };

  private attributes(): Record<string, string> {
    return { 'ws.workspace.id': this.identity.workspaceId, 'ws.backend': this.identity.backend };
  }

  /** The sandbox with its commands and file bytes reported and traced; the sandbox itself when nobody observes. */
  sandbox(sandbox: CompleteSandbox): CompleteSandbox {
    if (!this.active) return sandbox;
    const exec = async (argv: readonly string[], options?: ExecOptions): Promise<ExecResult> => {
      const command = programOf(argv);
      return inSpan(
        `exec ${command}`,
        { ...this.attributes(), 'process.executable.name': command },
        async (span) => {
          const began = performance.now();
          this.emit({ type: 'command.started', command, spawned: false });
          try {
            const result = await sandbox.exec(argv, options);
            this.emit({
              type: 'command.ended',
              command,
              spawned: false,
              durationMs: performance.now() - began,
              exitCode: result.exitCode,
              timedOut: result.timedOut,
              stdoutBytes: result.stdout.byteLength,
              stderrBytes: result.stderr.byteLength,
            });
            span.setAttributes({
              'process.exit.code': result.exitCode,
              'ws.command.timed_out': result.timedOut,
            });
            span.end();
            return result;
          } catch (error) {
            this.commandFailed(command, began, error);
            span.end({ type: errorType(error), message: errorText(error) });
            throw error;
          }
        },
      );
    };
    const spawn = async (argv: readonly string[], options?: SpawnOptions): Promise<SandboxProcess> => {
      const command = programOf(argv);
      const began = performance.now();
      this.emit({ type: 'command.started', command, spawned: true });
      let process: SandboxProcess;
      try {
        process = await sandbox.spawn(argv, options);
      } catch (error) {
        this.commandFailed(command, began, error);
        throw error;
      }
      void process.exited.then(
        (exit) =>
          this.emit({
            type: 'command.ended',
            command,
            spawned: true,
            durationMs: performance.now() - began,
            exitCode: exit.exitCode,
            timedOut: false,
            stdoutBytes: 0,
            stderrBytes: 0,
          }),
        () => {},
      );
      return process;
    };
    const timed = async <T>(
      type: 'file.read' | 'file.written',
      path: string,
      run: () => Promise<T>,
      bytes: (value: T) => number,
    ): Promise<T> => {
      const began = performance.now();
      const value = await run();
      this.emit({ type, path, bytes: bytes(value), durationMs: performance.now() - began });
      return value;
    };
    const readFile = (path: string, options?: ReadFileOptions) =>
      timed(
        'file.read',
        path,
        () => sandbox.readFile(path, options),
        (bytes) => bytes.byteLength,
      );
    const writeFile = (path: string, data: Uint8Array | string, options?: WriteOptions) =>
      timed(
        'file.written',
        path,
        () => sandbox.writeFile(path, data, options),
        () => byteLength(data),
      );
    const readStream = async (path: string, options?: ReadStreamOptions) => {
      const began = performance.now();
      const stream = await sandbox.readStream(path, options);
      return countStream(stream, (bytes) =>
        this.emit({ type: 'file.read', path, bytes, durationMs: performance.now() - began }),
      );
    };
    const writeStream = async (path: string, data: AsyncIterable<Uint8Array>, options?: WriteOptions) => {
      const began = performance.now();
      let bytes = 0;
      const counted = (async function* () {
        for await (const chunk of data) {
          bytes += chunk.byteLength;
          yield chunk;
        }
      })();
      await sandbox.writeStream(path, counted, options);
      this.emit({ type: 'file.written', path, bytes, durationMs: performance.now() - began });
    };
    const replaced: Record<string, unknown> = { exec, spawn, readFile, writeFile, readStream, writeStream };
    return new Proxy(sandbox, {
      get(target, key) {
        if (typeof key === 'string' && key in replaced) return replaced[key];
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  private commandFailed(command: string, began: number, error: unknown): void {
    this.emit({
      type: 'command.failed',
      command,
      durationMs: performance.now() - began,
      error: errorText(error),
    });
  }

  /** The tools with each call reported and traced (a span per call); the tools themselves when nobody observes. */
  tools<T extends Tool>(tools: T[]): T[] {
    if (!this.active) return tools;
    return tools.map((tool) => this.tool(tool));
  }

  /** MCP clients whose tools (listed, or called by name) are reported and traced like the built-ins. */
  mcpClients(clients: McpClient[]): McpClient[] {
    if (!this.active) return clients;
    return clients.map((client) => {
      const listTools: McpClient['listTools'] = async (options) =>
        this.tools(await client.listTools(options));
      const callTool: McpClient['callTool'] = (name, input, options) =>
        this.traced(`mcp__${client.name}__${name}`, options, () => client.callTool(name, input, options));
      return new Proxy(client, {
        get(target, key) {
          if (key === 'listTools') return listTools;
          if (key === 'callTool') return callTool;
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    });
  }

  private tool<T extends Tool>(tool: T): T {
    const call = (input: Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult> =>
      this.traced(tool.name, options, () => tool.call(input, options));
    return new Proxy(tool, {
      get(target, key) {
        if (key === 'call') return call;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  /** One tool call, in its span and between its events. */
  private traced(
    name: string,
    options: ToolCallOptions | undefined,
    run: () => Promise<ToolResult>,
  ): Promise<ToolResult> {
    const toolCallId = options?.toolCallId;
    const tool = { name };
    return inSpan(
      `execute_tool ${tool.name}`,
      {
        ...this.attributes(),
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool.name,
        'gen_ai.tool.type': 'function',
        'gen_ai.tool.call.id': toolCallId,
      },
      async (span) => {
        const began = performance.now();
        this.emit({ type: 'tool.started', tool: tool.name, toolCallId });
        try {
          const result = await run();
          this.emit({
            type: 'tool.ended',
            tool: tool.name,
            toolCallId,
            durationMs: performance.now() - began,
            isError: result.isError,
          });
          span.setAttributes({ 'ws.tool.is_error': result.isError });
          span.end(result.isError ? { type: 'tool_error', message: firstText(result) } : undefined);
          return result;
        } catch (error) {
          this.emit({
            type: 'tool.ended',
            tool: tool.name,
            toolCallId,
            durationMs: performance.now() - began,
            isError: true,
            error: errorText(error),
          });
          span.end({ type: errorType(error), message: errorText(error) });
          throw error;
        }
      },
    );
  }
}

function firstText(result: ToolResult): string {
  for (const block of result.content) if (block.type === 'text') return block.text.slice(0, 200);
  return 'the tool returned an error';
}

/** The stream as it is, with `done` told the bytes it carried once it ends (or is left). */
function countStream(
  stream: AsyncIterable<Uint8Array>,
  done: (bytes: number) => void,
): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      let bytes = 0;
      try {
        for await (const chunk of stream) {
          bytes += chunk.byteLength;
          yield chunk;
        }
      } finally {
        done(bytes);
      }
    },
  };
}
