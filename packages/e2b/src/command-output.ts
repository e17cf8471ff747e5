// The SDK's command output: its copy in the handle emptied, the gateway's stream taken over as it grows.
import type { ProcessExit } from '@ws/core';
import { type ChunkQueue, encodeUtf8 } from '@ws/core/backend';
import { CommandExitError, type CommandHandle } from 'e2b';

/** Output characters after which the gateway's output stream is taken over by a new subscription. */
export const ROTATE_AFTER_CHARS = 16 * 1024 * 1024;

/**
 * The SDK's command handle keeps every byte of output as a string, for its own `wait()` result; this
 * sandbox takes output through the callbacks and empties that copy as it goes, so a command printing
 * gigabytes (or the gateway's process, whose output is all its traffic) holds no memory. Pinned to the
 * e2b version this package depends on exactly; if the field moves, the conformance case
 * `exec.output-cap` (host memory flat under a huge output, through the gateway's own command) fails.
 */
export function forgetOutput(handle: CommandHandle | undefined): void {
  const kept = handle as unknown as { _stdout?: string; _stderr?: string } | undefined;
  if (!kept) return;
  if (kept._stdout) kept._stdout = '';
  if (kept._stderr) kept._stderr = '';
}

/** The output callbacks of a command, as `commands.run` and `commands.connect` take them. */
export interface OutputHandlers {
  readonly onStdout: (text: string) => void;
  readonly onStderr: (text: string) => void;
}

/**
 * The output of the gateway (`--stdio`), a process whose stdout is numbered lines (`<n> <frame>`),
 * taken whole. The SDK holds every byte of a command's output stream in memory while the stream is
 * open (undici 7's fetch with an abort signal), so after {@link ROTATE_AFTER_CHARS} of output this
 * subscribes to the process again (`connect`) and drops the old subscription once the new one has
 * caught up: the overlap delivers some lines twice, which the gateway channel's numbering drops, and
 * nothing is lost (a subscription that starts mid-line skips to the next line). Start the process
 * with the returned handlers, then hand its handle to `follow`; `finish` is called once, when the
 * process ends.
 */
export function gatewayOutput(output: {
  stdout: ChunkQueue;
  stderr: ChunkQueue;
  connect: (handlers: OutputHandlers) => Promise<CommandHandle>;
  finish: (exit: ProcessExit) => void;
  isOver: () => boolean;
}): OutputHandlers & { follow(handle: CommandHandle): void } {
  const { stdout, stderr } = output;
  interface Subscription extends OutputHandlers {
    handle?: CommandHandle;
    chars: number;
    first: number | undefined;
    last: number;
    dropped: boolean;
    /** Whole lines held back while an older subscription has not caught up with this one. */
    held: string[];
  }
  const subscriptions: Subscription[] = [];
  let rotating = false;
  const subscription = (midLine: boolean): Subscription => {
    let partial = '';
    let skipping = midLine;
    const sub: Subscription = {
      chars: 0,
      first: undefined,
      last: 0,
      dropped: false,
      held: [],
      onStdout: (text) => {
        forgetOutput(sub.handle);
        if (sub.dropped) return;
        sub.chars += text.length;
        let data = partial + text;
        if (skipping) {
          const newline = data.indexOf('\n');
          if (newline === -1) {
            partial = '';
            return;
          }
          data = data.slice(newline + 1);
          skipping = false;
        }
        const end = data.lastIndexOf('\n');
        partial = end === -1 ? data : data.slice(end + 1);
        if (end === -1) return;
        const lines = data.slice(0, end + 1);
        const numbers = lines.match(/^\d+/gm);
        if (numbers) {
          sub.first ??= Number(numbers[0]);
          sub.last = Number(numbers[numbers.length - 1]);
        }
        // Lines of a newer subscription wait until the older ones have delivered up to them.
        if (sub === subscriptions[0]) void stdout.push(encodeUtf8(lines));
        else sub.held.push(lines);
        settle();
      },
      onStderr: (text) => {
        forgetOutput(sub.handle);
        if (!sub.dropped) void stderr.push(encodeUtf8(text));
      },
    };
    return sub;
  };
  // Drops the older subscriptions once the newest has taken over from where they are.
  const settle = () => {
    const newest = subscriptions.at(-1);
    if (!newest) return;
    for (const old of subscriptions.slice(0, -1)) {
      if (old.dropped || newest.first === undefined || old.last < newest.first - 1) continue;
      old.dropped = true;
      void old.handle?.disconnect().catch(() => {});
    }
    for (let index = subscriptions.length - 2; index >= 0; index--)
      if (subscriptions[index]?.dropped) subscriptions.splice(index, 1);
    if (subscriptions.length === 1 && newest.held.length > 0) {
      for (const lines of newest.held.splice(0)) void stdout.push(encodeUtf8(lines));
    }
    if (!rotating && !output.isOver() && newest.chars > ROTATE_AFTER_CHARS && subscriptions.length === 1) {
      rotating = true;
      void rotate().finally(() => {
        rotating = false;
      });
    }
  };
  const follow = (sub: Subscription) => {
    sub.handle?.wait().then(
      (result) => {
        if (!sub.dropped) output.finish({ exitCode: result.exitCode });
      },
      (error: unknown) => {
        if (sub.dropped) return;
        output.finish({ exitCode: error instanceof CommandExitError ? error.exitCode : -1 });
      },
    );
  };
  const rotate = async () => {
    const next = subscription(true);
    try {
      next.handle = await output.connect(next);
    } catch {
      return; // the process ended, or the service is away: the current subscription goes on
    }
    subscriptions.push(next);
    follow(next);
  };
  const first = subscription(false);
  subscriptions.push(first);
  return {
    onStdout: first.onStdout,
    onStderr: first.onStderr,
    follow: (handle) => {
      first.handle = handle;
      follow(first);
    },
  };
}
