import type { McpClient } from '../contracts/mcp.js';
import type { CompleteSandbox, SandboxProcess } from '../contracts/sandbox.js';
import type { Tool } from '../contracts/tool.js';
import type { Workspace } from '../contracts/workspace.js';

/**
 * Counts the calls in flight on one managed workspace and when it was last used. The manager never
 * evicts a workspace whose count is above zero.
 */
export class Activity {
  /** Calls running now (spawned processes count until they exit). */
  inFlight = 0;
  /** `performance.now()` of the last call's start or end. */
  lastUsed = performance.now();

  /** @param onSettle called whenever a call ends (the workspace may have become evictable). */
  constructor(private readonly onSettle: () => void = () => {}) {}

  begin(): () => void {
    this.inFlight++;
    this.lastUsed = performance.now();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.inFlight--;
      this.lastUsed = performance.now();
      this.onSettle();
    };
  }

  /** Runs `call`, counting it until it settles; `map` transforms its (awaited) result. */
  run(call: () => unknown, map?: (value: unknown) => unknown): unknown {
    const end = this.begin();
    let result: unknown;
    try {
      result = call();
    } catch (error) {
      end();
      throw error;
    }
    if (isThenable(result)) {
      return Promise.resolve(result)
        .then((value) => (map ? map(value) : value))
        .finally(end);
    }
    try {
      return map ? map(result) : result;
    } finally {
      end();
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

type ResultMaps = Readonly<Partial<Record<PropertyKey, (value: unknown) => unknown>>>;

/**
 * A view of `target` whose methods run on `target` itself (private fields keep working) and are
 * counted by `activity`; `maps` wraps what some of them return, so that what a caller reaches
 * through the view (a sandbox, tools, MCP clients) is counted too.
 */
function counted<T extends object>(target: T, activity: Activity, maps: ResultMaps = {}): T {
  const wrappers = new Map<PropertyKey, { method: unknown; wrapper: unknown }>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      const cached = wrappers.get(property);
      if (cached?.method === value) return cached.wrapper;
      const method = value as (...args: unknown[]) => unknown;
      const map = maps[property];
      const wrapper = (...args: unknown[]) => activity.run(() => method.apply(object, args), map);
      wrappers.set(property, { method: value, wrapper });
      return wrapper;
    },
  });
}

const countedTools = (activity: Activity) => (tools: unknown) =>
  (tools as Tool[]).map((tool) => counted(tool, activity));

/**
 * A stream handed out is live work until it is read to its end, fails, or is given up (`break`,
 * `return()`): a workspace is not evicted under a reader.
 */
function countedStream(stream: AsyncIterable<Uint8Array>, activity: Activity): AsyncIterable<Uint8Array> {
  const end = activity.begin();
  return {
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      const iterator = stream[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const step = await iterator.next();
            if (step.done) end();
            return step;
          } catch (error) {
            end();
            throw error;
          }
        },
        async return(value?: unknown) {
          end();
          return iterator.return ? iterator.return(value) : { done: true, value: undefined };
        },
        async throw(error?: unknown) {
          end();
          if (iterator.throw) return iterator.throw(error);
          throw error;
        },
      };
    },
  };
}

function countedSandbox(sandbox: CompleteSandbox, activity: Activity): CompleteSandbox {
  return counted(sandbox, activity, {
    // A spawned process is live work until it exits.
    spawn: (process) => {
      const end = activity.begin();
      (process as SandboxProcess).exited.then(end, end);
      return process;
    },
    readStream: (stream) => countedStream(stream as AsyncIterable<Uint8Array>, activity),
  });
}

/**
 * The workspace as a manager hands it out: every call on it, on its sandbox, on its tools and on its
 * MCP clients and their tools counts as a call in flight until it settles.
 */
export function countedWorkspace<W extends Workspace>(workspace: W, activity: Activity): W {
  return counted(workspace, activity, {
    getSandbox: (sandbox) => countedSandbox(sandbox as CompleteSandbox, activity),
    listTools: countedTools(activity),
    listMcps: (clients) =>
      (clients as McpClient[]).map((client) =>
        counted(client, activity, { listTools: countedTools(activity) }),
      ),
  });
}
