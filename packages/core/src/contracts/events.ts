/**
 * What a workspace reports about its own life: the events an `onEvent` listener receives and
 * `DEBUG=ws:*` prints. Every event carries the fields of {@link WorkspaceEventBase}; its `type`
 * says which further fields it has.
 */

/** How much an event matters: `debug` for every call, `info` for the life of a sandbox, `warn` for trouble. */
export type WorkspaceEventLevel = 'debug' | 'info' | 'warn';

/** The fields every event has. */
export interface WorkspaceEventBase {
  /** When it happened, in milliseconds since the epoch. */
  readonly time: number;
  /** The workspace it happened in. */
  readonly workspaceId: string;
  /** Its backend (`"docker"`). */
  readonly backend: string;
  /** How much it matters. */
  readonly level: WorkspaceEventLevel;
  /** One line for a person (what `DEBUG=ws:*` prints after the event's namespace). */
  readonly message: string;
}

/** What a backend reports while it opens or runs a sandbox (the engine adds the common fields). */
export type BackendEvent =
  | {
      /** A new sandbox (container, Pod, vendor sandbox) was made for the workspace. */
      readonly type: 'sandbox.created';
      /** The sandbox's name or id at its vendor (the container's name, `namespace/pod`). */
      readonly sandboxId?: string | undefined;
      /** Milliseconds from the opening's start until the sandbox was there. */
      readonly durationMs: number;
    }
  | {
      /** The workspace was attached to its existing sandbox. */
      readonly type: 'sandbox.reattached';
      /** The sandbox's name or id at its vendor. */
      readonly sandboxId?: string | undefined;
      /** Milliseconds from the opening's start until the sandbox was attached (and running). */
      readonly durationMs: number;
    }
  | {
      /** The gateway answered its first health check. */
      readonly type: 'gateway.started';
      /** Milliseconds from the launch's start to its first healthy answer. */
      readonly durationMs: number;
      /** True when an earlier launch of this workspace's gateway had run (it died or stopped answering). */
      readonly restart: boolean;
      /** Which launch this is, from 1. */
      readonly generation: number;
    }
  | {
      /** A gateway launch failed; calls go the backend's own way meanwhile. */
      readonly type: 'gateway.failed';
      /** Why, ending with the tail of the gateway's log when there is one. */
      readonly error: string;
    }
  | {
      /** The running gateway stopped answering or exited; it restarts on the next call. */
      readonly type: 'gateway.down';
      /** What was seen (`the gateway process exited`, `the gateway stopped answering`). */
      readonly reason: string;
      /** The last lines of the gateway's log. */
      readonly logTail: string;
    }
  | {
      /** An image the sandbox needs is being pulled or built. */
      readonly type: 'image.progress';
      /** The image, as the workspace names it. */
      readonly image: string;
      /** One line of progress (`pulling …`, a layer's step, `downloading 12.3 MB of 45.6 MB`). */
      readonly progress: string;
    }
  | {
      /** A call to the vendor's service failed and is tried again. */
      readonly type: 'retry';
      /** The try that failed, from 1. */
      readonly attempt: number;
      /** Milliseconds until the next try. */
      readonly delayMs: number;
      /** The failure, as a message. */
      readonly error: string;
    };

/** What the engine itself reports. */
export type EngineEvent =
  | {
      /** `initialize()` opened the sandbox and laid out the workdir. */
      readonly type: 'workspace.opened';
      /** Milliseconds `initialize()` took. */
      readonly durationMs: number;
      /** The workdir inside the sandbox. */
      readonly workdir: string;
    }
  | {
      /** `initialize()` failed; nothing was left open. */
      readonly type: 'workspace.open_failed';
      /** Milliseconds until it failed. */
      readonly durationMs: number;
      /** The error's message (the error itself is what `initialize()` throws). */
      readonly error: string;
    }
  | {
      /** `close()` ended, or `destroy()` removed what the backend kept for the workspace. */
      readonly type: 'workspace.closed' | 'workspace.destroyed';
      /** Milliseconds it took. */
      readonly durationMs: number;
    }
  | {
      /** Something went wrong that did not stop the workspace (the same text is in `warnings`). */
      readonly type: 'warning';
      /** The warning's text. */
      readonly warning: string;
    }
  | {
      /** A command began (`exec` or `spawn`). */
      readonly type: 'command.started';
      /** The program it runs (`argv[0]`); never its arguments, which may hold secrets. */
      readonly command: string;
      /** True for a long-lived process started by `spawn`. */
      readonly spawned: boolean;
    }
  | {
      /** A command ended. */
      readonly type: 'command.ended';
      /** The program it ran (`argv[0]`). */
      readonly command: string;
      /** True for a process started by `spawn` (its output is its reader's, so its byte counts are 0). */
      readonly spawned: boolean;
      /** Milliseconds from its start to its end. */
      readonly durationMs: number;
      /** Its exit code (`-1` when it timed out; `128 + n` when signal `n` killed it). */
      readonly exitCode: number;
      /** True when it was killed because its `timeoutMs` passed. */
      readonly timedOut: boolean;
      /** Bytes of standard output kept in the result. */
      readonly stdoutBytes: number;
      /** Bytes of standard error kept in the result. */
      readonly stderrBytes: number;
    }
  | {
      /** A command could not be run at all (the sandbox is gone, the call was aborted). */
      readonly type: 'command.failed';
      /** The program it was to run (`argv[0]`). */
      readonly command: string;
      /** Milliseconds until it failed. */
      readonly durationMs: number;
      /** The error's message. */
      readonly error: string;
    }
  | {
      /** Bytes moved out of (`file.read`) or into (`file.written`) the sandbox by a file call or its stream. */
      readonly type: 'file.read' | 'file.written';
      /** The path, as the call named it. */
      readonly path: string;
      /** How many bytes moved. */
      readonly bytes: number;
      /** Milliseconds the call took. */
      readonly durationMs: number;
    }
  | {
      /** A tool call began (a built-in or an MCP tool). */
      readonly type: 'tool.started';
      /** The tool's name (`Bash`, `mcp__<server>__<tool>`). */
      readonly tool: string;
      /** The model's id of the call, when the caller passed one. */
      readonly toolCallId?: string | undefined;
    }
  | {
      /** A tool call ended. */
      readonly type: 'tool.ended';
      /** The tool's name. */
      readonly tool: string;
      /** The model's id of the call, when the caller passed one. */
      readonly toolCallId?: string | undefined;
      /** Milliseconds the call took. */
      readonly durationMs: number;
      /** True when the result is an error the model sees, or the call threw. */
      readonly isError: boolean;
      /** The thrown error's message, when the call threw (misuse of the API, an abort). */
      readonly error?: string | undefined;
    };

/** One event, as an `onEvent` listener receives it. Narrow it by `type`. */
export type WorkspaceEvent = WorkspaceEventBase & (BackendEvent | EngineEvent);

/** The kinds of event, by `type`. */
export type WorkspaceEventType = WorkspaceEvent['type'];

/**
 * Receives a workspace's events as they happen, in order. It runs inline: keep it quick (hand the
 * event to a logger or a queue). One that throws is reported as a process warning (the first time in
 * a workspace) and never stops the workspace.
 */
export type WorkspaceEventListener = (event: WorkspaceEvent) => void;
