import type { CompleteSandbox } from '../../contracts/sandbox.js';

/** How the search tools find files and text. */
import type { SearchMode } from '../../contracts/workspace-options.js';

export type { SearchMode };

/** Which search programs a sandbox has. */
export interface SearchPrograms {
  /** `rg` runs. */
  readonly ripgrep: boolean;
  /** `stat --printf` (GNU coreutils) runs. */
  readonly gnuStat: boolean;
}

const PROBE = `rg --version >/dev/null 2>&1 && echo ripgrep
stat --printf '' / >/dev/null 2>&1 && echo gnu-stat
exit 0`;

/**
 * Finds out, once per sandbox, which search programs it has, and so whether Grep and Glob use
 * ripgrep or the POSIX fallback (`find` and `grep`). `auto` follows the probe; `ripgrep` and `posix`
 * force one.
 */
export class SearchTools {
  private readonly probes = new WeakMap<CompleteSandbox, Promise<SearchPrograms>>();

  constructor(readonly mode: SearchMode = 'auto') {}

  /** The programs this sandbox has (probed once, then remembered). */
  programs(sandbox: CompleteSandbox, signal?: AbortSignal): Promise<SearchPrograms> {
    let probe = this.probes.get(sandbox);
    if (!probe) {
      probe = sandbox
        .exec(['sh', '-c', PROBE], { timeoutMs: 10_000, maxOutputBytes: 4096, ...(signal ? { signal } : {}) })
        .then((result) => ({
          ripgrep: result.stdoutText.includes('ripgrep'),
          gnuStat: result.stdoutText.includes('gnu-stat'),
        }));
      probe.catch(() => this.probes.delete(sandbox));
      this.probes.set(sandbox, probe);
    }
    return probe;
  }

  /** True when Grep and Glob should use `rg` in this sandbox. */
  async useRipgrep(sandbox: CompleteSandbox, signal?: AbortSignal): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'ripgrep';
    return (await this.programs(sandbox, signal)).ripgrep;
  }
}
