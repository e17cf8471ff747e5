import { constants, type Dirent, existsSync } from 'node:fs';
import { type FileHandle, open, readdir, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Open a folder, never a link in its place. */
const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** Where this process's descriptors can be named as folders (Linux). */
const DESCRIPTORS = '/proc/self/fd';
const BY_DESCRIPTOR = existsSync(DESCRIPTORS);

/**
 * A folder held open, whose entries are named through its descriptor (`/proc/self/fd/<fd>/<name>`):
 * a folder a sandbox can write may be swapped for a link at any moment, and a path walked again from
 * the top would follow it to the host's own files. What is reached through a held folder stays inside
 * it: its entries are looked up in the folder that was opened, and a link among them is never
 * followed. (Where `/proc` is missing, entries are named by path, checked when each folder is opened.)
 */
export class HeldFolder {
  private constructor(
    private readonly handle: FileHandle,
    /** The folder's path, for messages and reports. */
    readonly path: string,
  ) {}

  /**
   * Opens `path` if it is a folder (not a link); undefined when it is not, or is gone. `follow` lets a
   * trusted path end in a link (a host folder the sandbox cannot write, such as `/tmp` on macOS).
   */
  static async open(path: string, shown: string = path, follow = false): Promise<HeldFolder | undefined> {
    try {
      return new HeldFolder(
        await open(path, follow ? FOLDER_FLAGS & ~constants.O_NOFOLLOW : FOLDER_FLAGS),
        shown,
      );
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** A path to `name` in this folder that resolves through the held descriptor. */
  entry(name: string): string {
    return BY_DESCRIPTOR ? `${DESCRIPTORS}/${this.handle.fd}/${name}` : join(this.path, name);
  }

  /** The entries of this folder. */
  list(): Promise<Dirent[]> {
    return readdir(BY_DESCRIPTOR ? `${DESCRIPTORS}/${this.handle.fd}` : this.path, { withFileTypes: true });
  }

  /** Opens the folder `name` in this one (undefined when it is not a folder, a link included). */
  child(name: string): Promise<HeldFolder | undefined> {
    return HeldFolder.open(this.entry(name), join(this.path, name));
  }

  /**
   * Removes `name` from this folder, and everything in it when it is a folder, through held folders
   * only: a link is removed, never followed. Gone already is done.
   */
  async remove(name: string): Promise<void> {
    const folder = await this.child(name);
    if (!folder) {
      await unlink(this.entry(name)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      return;
    }
    try {
      for (const entry of await folder.list()) await folder.remove(entry.name);
    } finally {
      await folder.close();
    }
    await rmdir(this.entry(name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/**
 * Removes `path` and everything in it, where a sandbox may have written below it: no link under
 * `path` is ever followed, even one swapped in while the removal runs. `path`'s parent folder is
 * trusted (a host folder the sandbox cannot write). Gone already is done.
 */
export async function removeTree(path: string): Promise<void> {
  const parent = await HeldFolder.open(dirname(path), dirname(path), true);
  if (!parent) return;
  try {
    await parent.remove(basename(path));
  } finally {
    await parent.close();
  }
}
