const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Steps shorter than this show nothing, so that a fast local run does not flicker. */
const SHOW_AFTER_MS = 300;

/**
 * A status line on stderr while a long step runs (opening a sandbox, installing the gateway, listing
 * a cloud's sandboxes): a spinner, the step and the time so far, rewritten in place and erased when
 * the step ends. Only on a terminal: when stderr is a pipe or a file, nothing at all is written.
 */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private shown = false;
  private frame = 0;
  private readonly started = performance.now();

  private constructor(
    private label: string,
    private readonly stream: NodeJS.WriteStream,
  ) {
    // The step's own work keeps the process alive; the spinner never does.
    this.timer = setInterval(() => this.draw(), 100);
    this.timer.unref();
  }

  /** Starts a status line for `label` (`opening the docker workspace`); a no-op off a terminal. */
  static start(label: string, stream: NodeJS.WriteStream = process.stderr): Progress | undefined {
    if (!stream.isTTY || process.env.WS_PROGRESS === '0') return undefined;
    return new Progress(label, stream);
  }

  /** Runs `work` with a status line for `label`, erased when it settles. */
  static async around<T>(label: string, work: () => Promise<T>): Promise<T> {
    const progress = Progress.start(label);
    try {
      return await work();
    } finally {
      progress?.stop();
    }
  }

  /** Changes the step's text. */
  update(label: string): void {
    this.label = label;
  }

  /** Erases the line; idempotent. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.shown) this.stream.write('\r\x1b[K');
    this.shown = false;
  }

  private draw(): void {
    const elapsed = performance.now() - this.started;
    if (elapsed < SHOW_AFTER_MS) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    const columns = this.stream.columns || 80;
    const line = `${FRAMES[this.frame]} ws: ${this.label}… ${(elapsed / 1000).toFixed(1)}s`;
    this.stream.write(`\r\x1b[K${line.slice(0, columns - 1)}`);
    this.shown = true;
  }
}
