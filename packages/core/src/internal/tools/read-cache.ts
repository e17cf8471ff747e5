/** One remembered read: which content the agent saw. */
export interface ReadCacheEntry {
  /** SHA-256 of the file's bytes when they were read or last written by a tool. */
  readonly hash: string;
  readonly size: number;
}

/**
 * The read-before-edit memory of one agent: which file contents it has seen, keyed by path and
 * validated by a content hash taken through the sandbox (never by host mtimes, which sandboxes do
 * not share and which have one-second resolution on some filesystems). Least recently used entries
 * are dropped beyond `maxFiles`.
 */
export class ReadCache {
  private readonly entries = new Map<string, ReadCacheEntry>();

  constructor(private readonly maxFiles = 100) {}

  /** Remembers that the agent has seen `hash` at `path`. */
  remember(path: string, entry: ReadCacheEntry): void {
    this.entries.delete(path);
    this.entries.set(path, entry);
    while (this.entries.size > this.maxFiles) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  /**
   * What the agent saw at `path`: `fresh` when it matches `currentHash`, `stale` when the file changed
   * since, `unread` when the agent never saw it. A fresh entry becomes the most recently used.
   */
  check(path: string, currentHash: string): 'fresh' | 'stale' | 'unread' {
    const entry = this.entries.get(path);
    if (!entry) return 'unread';
    if (entry.hash !== currentHash) return 'stale';
    this.entries.delete(path);
    this.entries.set(path, entry);
    return 'fresh';
  }

  /** Forgets one path, or everything. */
  forget(path?: string): void {
    if (path === undefined) this.entries.clear();
    else this.entries.delete(path);
  }

  get size(): number {
    return this.entries.size;
  }
}
