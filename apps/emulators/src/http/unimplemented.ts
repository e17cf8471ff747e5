/**
 * Requests an emulator does not implement. Each is logged as `<vendor>: unimplemented <what>` (a line
 * `ws-emulator --quiet` still prints, and `launchEmulator` collects into `unimplemented`) and kept in
 * the emulator's `unimplemented` list, so that a suite fails when a backend made a call the emulator
 * only pretends to answer.
 */
export class UnimplementedLog {
  readonly #seen: string[] = [];

  constructor(
    private readonly vendor: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Records one request the emulator does not implement (`GET /v2/templates`, `rpc Filesystem/WatchDir`). */
  report(what: string): void {
    const line = what.replace(/[\r\n]+/g, ' ').slice(0, 500);
    this.#seen.push(line);
    this.log(`${this.vendor}: unimplemented ${line}`);
  }

  /** What was reported so far, oldest first. */
  get requests(): readonly string[] {
    return [...this.#seen];
  }
}

/** The `<what>` of a log line written by {@link UnimplementedLog}, or undefined for any other line. */
export function unimplementedOf(line: string): string | undefined {
  return /^[a-z0-9]+: unimplemented (.+)$/.exec(line)?.[1];
}
