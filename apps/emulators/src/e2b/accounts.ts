import { posix } from 'node:path';
import type Docker from 'dockerode';
import { runExec } from '../docker/exec.js';

/** The Linux account an envd request acts as. */
export interface Account {
  /** The name envd reports (`USER`, `LOGNAME`). */
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** E2B's default user. Templates built by E2B have it; a plain image usually does not. */
export const E2B_DEFAULT_USER = 'user';

const ROOT: Account = { name: 'root', uid: 0, gid: 0, home: '/root' };

const LOOKUP = 'getent passwd "$1" 2>/dev/null || grep -E "^$1:" /etc/passwd 2>/dev/null | head -n 1';

/** Thrown when a request names a user the container does not have. */
export class UnknownUserError extends Error {
  constructor(readonly username: string) {
    super(`user '${username}' does not exist in the sandbox`);
  }
}

/**
 * Resolves the user of an envd request, caching per container. No user (what the SDK sends unless the
 * caller passes `user`) is root. `user`, E2B's default, is the container's `user` account when it has
 * one, else an alias of root (with root's home), so SDK code written for E2B runs on plain images.
 * Any other name must exist in the container.
 */
export class AccountResolver {
  private readonly cache = new Map<string, Promise<Account | undefined>>();

  constructor(private readonly container: Docker.Container) {}

  async resolve(username: string | undefined): Promise<Account> {
    if (username === undefined || username === '' || username === 'root') {
      return (await this.lookup('root')) ?? ROOT;
    }
    const account = await this.lookup(username);
    if (account) return account;
    if (username === E2B_DEFAULT_USER) return (await this.lookup('root')) ?? ROOT;
    throw new UnknownUserError(username);
  }

  private lookup(name: string): Promise<Account | undefined> {
    let pending = this.cache.get(name);
    if (!pending) {
      pending = runExec(this.container, ['sh', '-c', LOOKUP, 'sh', name], { user: 'root' }).then(
        (result) => parsePasswdLine(result.stdout.toString('utf8').trim()),
        () => undefined,
      );
      // A failed lookup (say, a paused container) is asked again next time.
      void pending.then((account) => {
        if (!account) this.cache.delete(name);
      });
      this.cache.set(name, pending);
    }
    return pending;
  }
}

function parsePasswdLine(line: string): Account | undefined {
  const [name, , uid, gid, , home] = line.split(':');
  if (!name || uid === undefined || gid === undefined) return undefined;
  const uidNumber = Number(uid);
  const gidNumber = Number(gid);
  if (!Number.isInteger(uidNumber) || !Number.isInteger(gidNumber)) return undefined;
  return { name, uid: uidNumber, gid: gidNumber, home: home || '/' };
}

/** An envd path made absolute: `~` and relative paths are taken from the user's home, as envd does. */
export function resolveSandboxPath(path: string | undefined, home: string): string {
  if (path === undefined || path === '') return home;
  if (path === '~') return home;
  if (path.startsWith('~/')) return posix.resolve(home, path.slice(2));
  return posix.resolve(home, path);
}

/** The user name of a `Authorization: Basic base64("<user>:")` header, as the SDK sends it. */
export function usernameFromAuthorization(header: string | null | undefined): string | undefined {
  const match = /^Basic\s+(.+)$/i.exec(header?.trim() ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const name = decoded.split(':')[0];
  return name === '' ? undefined : name;
}
