// The `user` option of a Docker workspace: the container's `Config.User`, resolved in the image (its
// /etc/passwd, read through the archive API before the container starts), and the workdir handed to
// that user so that commands can write it.
import { WsError } from '@ws/core';
import { collectBytes, type WorkspaceUser } from '@ws/core/backend';
import type Docker from 'dockerode';
import { firstTarEntry, type TarOwner, tarFolder } from './tar.js';

/** One account of /etc/passwd. */
interface PasswdEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

function parsePasswd(text: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const line of text.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (!name || uid === undefined || gid === undefined) continue;
    const [uidNumber, gidNumber] = [Number(uid), Number(gid)];
    if (Number.isInteger(uidNumber) && Number.isInteger(gidNumber))
      entries.push({ name, uid: uidNumber, gid: gidNumber });
  }
  return entries;
}

/** The container's /etc/passwd (empty when it has none), read through the archive API: no command runs. */
async function readPasswd(container: Docker.Container): Promise<PasswdEntry[]> {
  try {
    const archive = (await container.getArchive({ path: '/etc/passwd' })) as AsyncIterable<Uint8Array>;
    const entry = await firstTarEntry(archive);
    if (entry.type !== 'file') return [];
    return parsePasswd(Buffer.from(await collectBytes(entry.content)).toString('utf8'));
  } catch {
    return [];
  }
}

/**
 * Who `user` is in the container's image, as uid and gid, the way the engine resolves `Config.User`:
 * a name through /etc/passwd; a uid alone takes the gid of its account, else 0.
 * @throws WsError `INVALID_ARGUMENT` when the image has no account of that name.
 */
export async function resolveContainerUser(
  container: Docker.Container,
  user: WorkspaceUser,
  image: string,
): Promise<TarOwner> {
  if ('uid' in user && user.gid !== undefined) return { uid: user.uid, gid: user.gid };
  const accounts = await readPasswd(container);
  if ('uid' in user)
    return { uid: user.uid, gid: accounts.find((entry) => entry.uid === user.uid)?.gid ?? 0 };
  const account = accounts.find((entry) => entry.name === user.name);
  if (!account)
    throw new WsError(
      'INVALID_ARGUMENT',
      `DockerWorkspace: the image ${image} has no user ${JSON.stringify(user.name)} (not in its /etc/passwd); give a user the image has, a numeric uid or uid:gid, or an image that adds the account`,
      { details: { option: 'user', user: user.name, image } },
    );
  return { uid: account.uid, gid: account.gid };
}

/**
 * Hands a folder of the container (the workdir, a bound one included) to `owner` with `mode`, through
 * the archive API, which the engine applies as root whatever the container's capabilities.
 */
export async function giveFolder(
  container: Docker.Container,
  path: string,
  owner: TarOwner,
  mode: number,
): Promise<void> {
  await container.putArchive(Buffer.from(tarFolder(path.replace(/^\//, ''), mode, owner)), { path: '/' });
}
