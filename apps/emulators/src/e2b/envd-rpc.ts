import type {
  DescMessage,
  DescMethod,
  DescMethodServerStreaming,
  DescMethodUnary,
  DescService,
} from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type HandlerContext,
  type MethodImpl,
} from '@connectrpc/connect';
import type { UnimplementedLog } from '../http/unimplemented.js';
import { resolveSandboxPath } from './accounts.js';
import { type EnvdCaller, requireSandbox, resolveEnvdCaller } from './envd-access.js';
import type { EnvdDescriptors } from './envd-descriptors.js';
import type { EventQueue } from './event-queue.js';
import type { ManagedProcess, ProcessConfig, ProcessEventValue } from './process-table.js';
import type { SandboxRegistry } from './sandbox-registry.js';
import type { EntryInfoMessage, ProcessListMessage, ProcessStreamMessage } from './sdk-types.js';

// The request messages, as the handlers read them (the router decodes them with the SDK's descriptors).
type Selector = {
  selector: { case: 'pid'; value: number } | { case: 'tag'; value: string } | { case: undefined };
};
type PtyRequest = { size?: { cols: number; rows: number } };
interface StartRequest {
  process?: ProcessConfig;
  pty?: PtyRequest;
  tag?: string;
  stdin?: boolean;
}
interface SendInputRequest {
  process?: Selector;
  input?: { input: { case: 'stdin' | 'pty'; value: Uint8Array } | { case: undefined } };
}
interface SendSignalRequest {
  process?: Selector;
  signal: number;
}
interface UpdateRequest {
  process?: Selector;
  pty?: PtyRequest;
}

type Message = Record<string, unknown>;
type Unary = (request: never, context: HandlerContext) => Promise<Message>;
type Streaming = (request: never, context: HandlerContext) => AsyncIterable<Message>;

export interface EnvdServiceOptions {
  registry: SandboxRegistry;
  /** Period of keepalive events on idle process streams (0: none). */
  keepaliveMs: number;
  /** Where calls of methods the emulator does not implement are reported. */
  unimplemented: UnimplementedLog;
}

const SIGNALS: Readonly<Record<number, 'SIGKILL' | 'SIGTERM'>> = { 9: 'SIGKILL', 15: 'SIGTERM' };

function selectorOf(request: { process?: Selector }): Selector['selector'] {
  return request.process?.selector ?? { case: undefined };
}

function caller(options: EnvdServiceOptions, context: HandlerContext): Promise<EnvdCaller> {
  return resolveEnvdCaller(options.registry, context.requestHeader);
}

/** The Connect-Timeout-Ms the client asked for; envd kills a started process after it. */
function requestedTimeoutMs(context: HandlerContext): number {
  const value = Number(context.requestHeader.get('connect-timeout-ms') ?? '');
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * A subscriber's stream: the start event, then the process's events. The subscription ends as soon as
 * the client goes away, not when the stream's generator next runs: a response whose client has
 * disconnected can leave the generator suspended for good (the server waits for a `drain` that a
 * destroyed socket never emits), and a subscriber nobody drains would hold the process paused.
 */
async function* follow(
  process: ManagedProcess,
  queue: EventQueue<ProcessEventValue>,
  context: HandlerContext,
  keepaliveMs: number,
): AsyncGenerator<ProcessStreamMessage> {
  const leave = () => process.unsubscribe(queue);
  context.signal.addEventListener('abort', leave, { once: true });
  try {
    yield { event: { event: { case: 'start', value: { pid: process.pid } } } };
    yield* relay(queue, context, keepaliveMs);
  } finally {
    context.signal.removeEventListener('abort', leave);
    leave();
  }
}

/** The events of a process stream, with keepalives while it is quiet, until its end event. */
async function* relay(
  queue: EventQueue<ProcessEventValue>,
  context: HandlerContext,
  keepaliveMs: number,
): AsyncGenerator<ProcessStreamMessage> {
  for (;;) {
    const next = await queue.next(context.signal, keepaliveMs);
    if (next.kind === 'end') return;
    const event: ProcessEventValue = next.kind === 'idle' ? { case: 'keepalive', value: {} } : next.item;
    yield { event: { event } };
  }
}

function processService(options: EnvdServiceOptions): Record<string, Unary | Streaming> {
  return {
    list: (async (_request: Message, context: HandlerContext) => {
      const sandbox = requireSandbox(options.registry, context.requestHeader);
      const listed: ProcessListMessage = {
        processes: sandbox.processes.list().map((process) => ({
          config: process.config,
          pid: process.pid,
          ...(process.tag !== undefined ? { tag: process.tag } : {}),
        })),
      };
      return listed;
    }) as Unary,

    start: async function* (request: StartRequest, context: HandlerContext) {
      const { sandbox, account } = await caller(options, context);
      const config: ProcessConfig = {
        cmd: request.process?.cmd ?? '',
        args: request.process?.args ?? [],
        envs: request.process?.envs ?? {},
        ...(request.process?.cwd !== undefined ? { cwd: request.process.cwd } : {}),
      };
      if (config.cmd === '') throw new ConnectError('process.cmd is required', Code.InvalidArgument);
      const size = request.pty?.size;
      const { process, queue } = await sandbox.processes.start({
        account,
        cwd: resolveSandboxPath(config.cwd, account.home),
        config,
        ...(request.tag !== undefined ? { tag: request.tag } : {}),
        // envd attaches stdin unless the request turns it off; the SDK always says which.
        stdin: request.stdin ?? true,
        ...(request.pty ? { pty: { cols: size?.cols || 80, rows: size?.rows || 24 } } : {}),
        timeoutMs: requestedTimeoutMs(context),
      });
      yield* follow(process, queue, context, options.keepaliveMs);
    } as Streaming,

    connect: async function* (request: { process?: Selector }, context: HandlerContext) {
      const sandbox = requireSandbox(options.registry, context.requestHeader);
      const process = sandbox.processes.find(selectorOf(request));
      yield* follow(process, process.subscribe(), context, options.keepaliveMs);
    } as Streaming,

    update: (async (request: UpdateRequest, context: HandlerContext) => {
      const sandbox = requireSandbox(options.registry, context.requestHeader);
      const process = sandbox.processes.find(selectorOf(request));
      const size = request.pty?.size;
      if (size) await process.resize(size.cols, size.rows);
      return {};
    }) as Unary,

    sendInput: (async (request: SendInputRequest, context: HandlerContext) => {
      const sandbox = requireSandbox(options.registry, context.requestHeader);
      const process = sandbox.processes.find(selectorOf(request));
      const input = request.input?.input;
      if (input?.case === 'stdin' || input?.case === 'pty') await process.writeInput(input.value, input.case);
      return {};
    }) as Unary,

    closeStdin: (async (request: { process?: Selector }, context: HandlerContext) => {
      const sandbox = requireSandbox(options.registry, context.requestHeader);
      sandbox.processes.find(selectorOf(request)).closeStdin();
      return {};
    }) as Unary,

    sendSignal: (async (request: SendSignalRequest, context: HandlerContext) => {
      const sandbox = requireSandbox(options.registry, context.requestHeader);
      const process = sandbox.processes.find(selectorOf(request));
      const signal = SIGNALS[request.signal];
      if (!signal) throw new ConnectError(`invalid signal: ${request.signal}`, Code.Unimplemented);
      await process.signal(signal);
      return {};
    }) as Unary,
  };
}

function filesystemService(options: EnvdServiceOptions): Record<string, Unary | Streaming> {
  return {
    stat: (async (request: { path: string }, context: HandlerContext) => {
      const { account, files } = await caller(options, context);
      const entry: EntryInfoMessage = await files.stat(
        resolveSandboxPath(request.path, account.home),
        account,
      );
      return { entry };
    }) as Unary,

    listDir: (async (request: { path: string; depth: number }, context: HandlerContext) => {
      const { account, files } = await caller(options, context);
      const entries: EntryInfoMessage[] = await files.list(
        resolveSandboxPath(request.path, account.home),
        request.depth || 1,
        account,
      );
      return { entries };
    }) as Unary,

    makeDir: (async (request: { path: string }, context: HandlerContext) => {
      const { account, files } = await caller(options, context);
      const entry: EntryInfoMessage = await files.makeDir(
        resolveSandboxPath(request.path, account.home),
        account,
      );
      return { entry };
    }) as Unary,

    move: (async (request: { source: string; destination: string }, context: HandlerContext) => {
      const { account, files } = await caller(options, context);
      const source = resolveSandboxPath(request.source, account.home);
      const destination = resolveSandboxPath(request.destination, account.home);
      const entry: EntryInfoMessage = await files.move(source, destination, account);
      return { entry };
    }) as Unary,

    remove: (async (request: { path: string }, context: HandlerContext) => {
      const { account, files } = await caller(options, context);
      await files.remove(resolveSandboxPath(request.path, account.home), account);
      return {};
    }) as Unary,
  };
}

function register(
  router: ConnectRouter,
  service: DescService,
  impl: Record<string, Unary | Streaming>,
  log: UnimplementedLog,
): void {
  for (const method of service.methods) {
    const handler = impl[method.localName];
    if (method.methodKind === 'unary') {
      router.rpc(
        method as DescMethodUnary<DescMessage, DescMessage>,
        (handler ?? unimplemented(method, log)) as MethodImpl<DescMethodUnary<DescMessage, DescMessage>>,
      );
    } else if (method.methodKind === 'server_streaming') {
      router.rpc(
        method as DescMethodServerStreaming<DescMessage, DescMessage>,
        (handler ?? unimplementedStream(method, log)) as MethodImpl<
          DescMethodServerStreaming<DescMessage, DescMessage>
        >,
      );
    }
    // Client-streaming (Process/StreamInput) is left out: its path reaches the fallback, which reports it.
  }
}

function notImplemented(method: DescMethod, log: UnimplementedLog): ConnectError {
  log.report(`rpc ${method.parent.typeName}/${method.name}`);
  return new ConnectError(
    `${method.parent.typeName}/${method.name} is not implemented by the emulator`,
    Code.Unimplemented,
  );
}

function unimplemented(method: DescMethod, log: UnimplementedLog): Unary {
  return async () => {
    throw notImplemented(method, log);
  };
}

function unimplementedStream(method: DescMethod, log: UnimplementedLog): Streaming {
  // biome-ignore lint/correctness/useYield: it fails before its first event
  return async function* () {
    throw notImplemented(method, log);
  };
}

/** Registers envd's `process.Process` and `filesystem.Filesystem` on a Connect router. */
export function registerEnvdServices(
  router: ConnectRouter,
  descriptors: EnvdDescriptors,
  options: EnvdServiceOptions,
): void {
  register(router, descriptors.process, processService(options), options.unimplemented);
  register(router, descriptors.filesystem, filesystemService(options), options.unimplemented);
}
