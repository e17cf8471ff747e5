import { WsError } from '../contracts/errors.js';

/** The `user` option of a workspace, checked: a name, or a numeric uid with an optional gid. */
export type WorkspaceUser =
  | {
      /** The option as given. */
      readonly text: string;
      /** The user name. */
      readonly name: string;
    }
  | {
      /** The option as given (`uid` or `uid:gid`). */
      readonly text: string;
      /** The numeric user id. */
      readonly uid: number;
      /** The numeric group id; undefined when only a uid was given. */
      readonly gid?: number;
    };

const USER_NAME = /^[a-z_][a-z0-9_-]*$/;
const USER_ID = /^(\d+)(?::(\d+))?$/;
/** The longest user name Linux tools accept, and the longest `user` taken. */
const MAX_USER_CHARS = 64;

/**
 * Checks a workspace's `user` option (who commands run as): a name (`^[a-z_][a-z0-9_-]*$`) or a
 * numeric `uid` or `uid:gid`, at most 64 characters. Undefined stays undefined.
 * @throws WsError `INVALID_ARGUMENT` naming the class and the value.
 */
export function checkWorkspaceUser(className: string, value: unknown): WorkspaceUser | undefined {
  if (value === undefined) return undefined;
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  const refuse = (why: string) =>
    new WsError('INVALID_ARGUMENT', `${className}: user ${shown} ${why}`, { details: { option: 'user' } });
  if (typeof value !== 'string') throw refuse('is not a string');
  if (value.length === 0 || value.length > MAX_USER_CHARS)
    throw refuse(`must have 1 to ${MAX_USER_CHARS} characters`);
  const ids = USER_ID.exec(value);
  if (ids) {
    const [uid, gid] = [Number(ids[1]), ids[2] === undefined ? undefined : Number(ids[2])];
    if (uid > 0xfffffffe || (gid !== undefined && gid > 0xfffffffe)) throw refuse('is past the largest id');
    return gid === undefined ? { text: value, uid } : { text: value, uid, gid };
  }
  if (!USER_NAME.test(value))
    throw refuse('is neither a user name (lower-case letters, digits, _ and -) nor a uid or uid:gid');
  return { text: value, name: value };
}

/**
 * The option-key hint of a backend that cannot switch users (`splitOptions`'s `hints`), so that
 * `user` is refused with `INVALID_ARGUMENT` saying why rather than as an unknown key.
 */
export function noUserSwitchHint(why: string): Readonly<Record<string, string>> {
  return { user: `commands run as ${why}; there is no user to switch to` };
}
