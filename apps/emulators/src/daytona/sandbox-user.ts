import type Docker from 'dockerode';
import { dockerStatus } from '../docker/exec.js';
import { firstFileOfTar } from '../docker/tar.js';
import { tarEntries } from '../docker/tar-entries.js';

/** Daytona's default sandbox user; its home is `/home/daytona`. */
export const DAYTONA_DEFAULT_USER = 'daytona';

/** The account commands and file operations of a sandbox run as. */
export interface SandboxAccount {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

async function readEtcFile(container: Docker.Container, path: string): Promise<string> {
  try {
    const archive = await container.getArchive({ path });
    const content = await firstFileOfTar(archive as unknown as AsyncIterable<Uint8Array>);
    return content?.toString('utf8') ?? '';
  } catch (error) {
    if (dockerStatus(error) === 404) return '';
    throw error;
  }
}

function withNewline(text: string): string {
  return text === '' || text.endsWith('\n') ? text : `${text}\n`;
}

/** A container's `/etc/passwd` and `/etc/group`. */
export interface EtcFiles {
  passwd: string;
  group: string;
}

/** The `/etc/passwd` and `/etc/group` of a container that nothing has changed yet (as its image has them). */
export async function readAccounts(container: Docker.Container): Promise<EtcFiles> {
  return {
    passwd: await readEtcFile(container, '/etc/passwd'),
    group: await readEtcFile(container, '/etc/group'),
  };
}

/**
 * The passwd and group files of each image (by id), read through the archive API from the first
 * container of the image and kept: every later sandbox of the image saves two engine round trips.
 */
export class ImageAccounts {
  private readonly etcOfImage = new Map<string, Promise<EtcFiles>>();

  /** The passwd and group files of a new container's image. */
  async of(container: Docker.Container): Promise<EtcFiles> {
    const { Image: image } = await container.inspect();
    let known = this.etcOfImage.get(image);
    if (!known) {
      known = readAccounts(container);
      this.etcOfImage.set(image, known);
      known.catch(() => this.etcOfImage.delete(image));
    }
    return known;
  }
}

/**
 * Finds the account `name` in a (created, not necessarily started) container, or adds it: a passwd and
 * group entry with the first free id from 1000, and a home `/home/<name>` it owns. The container holds
 * no capability to run `useradd`, so the files go in through the archive API, which the engine applies
 * as root with the owners the archive names. `etc`: the container's passwd and group when known (a new
 * container has its image's), which saves reading them.
 */
export async function ensureAccount(
  container: Docker.Container,
  name: string,
  etc?: EtcFiles,
): Promise<SandboxAccount> {
  const passwd = etc ? etc.passwd : await readEtcFile(container, '/etc/passwd');
  const passwdLines = passwd.split('\n').filter((line) => line !== '');
  const existing = passwdLines.map((line) => line.split(':')).find((fields) => fields[0] === name);
  if (existing) {
    return {
      name,
      uid: Number(existing[2]) || 0,
      gid: Number(existing[3]) || 0,
      home: existing[5] || '/',
    };
  }
  if (name === 'root') return { name, uid: 0, gid: 0, home: '/root' };
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(name)) throw new Error(`invalid user name ${JSON.stringify(name)}`);
  const group = etc ? etc.group : await readEtcFile(container, '/etc/group');
  const usedUids = new Set(passwdLines.map((line) => Number(line.split(':')[2])));
  const usedGids = new Set(
    group
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => Number(line.split(':')[2])),
  );
  let uid = 1000;
  while (usedUids.has(uid) || usedGids.has(uid)) uid++;
  const home = `/home/${name}`;
  const shell = passwd.includes('/bin/bash') ? '/bin/bash' : '/bin/sh';
  await container.putArchive(
    tarEntries([
      {
        name: 'etc/passwd',
        type: 'file',
        content: Buffer.from(`${withNewline(passwd)}${name}:x:${uid}:${uid}::${home}:${shell}\n`),
        mode: 0o644,
        uid: 0,
        gid: 0,
      },
      {
        name: 'etc/group',
        type: 'file',
        content: Buffer.from(`${withNewline(group)}${name}:x:${uid}:\n`),
        mode: 0o644,
        uid: 0,
        gid: 0,
      },
      { name: 'home/', type: 'directory', mode: 0o755, uid: 0, gid: 0 },
      { name: `home/${name}/`, type: 'directory', mode: 0o755, uid, gid: uid },
    ]),
    { path: '/' },
  );
  return { name, uid, gid: uid, home };
}
