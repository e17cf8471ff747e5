import { WsError } from '../contracts/errors.js';

/** The longest id accepted, in UTF-8 bytes: the length limit of one file name on common filesystems. */
export const MAX_ID_BYTES = 255;

// C0 controls, DEL and the C1 controls: a name holding one of them cannot be shown or typed safely.
function hasControlCharacter(value: string): boolean {
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code <= 0x1f || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/**
 * Checks an id that becomes one path segment (a workspace, agent or session id, a tool-result id) and
 * returns it unchanged.
 *
 * Refused with `INVALID_ARGUMENT`: anything but a non-empty string, a leading `.` (so `.`, `..`,
 * `.seed`), `/` or `\`, NUL and other control characters (newlines included), and more than
 * {@link MAX_ID_BYTES} UTF-8 bytes. Everything else, spaces, quotes and non-ASCII letters included,
 * is kept as given.
 *
 * @param value the id to check.
 * @param kind what the id names, used in the error message (`"sessionId"`).
 * @throws WsError `INVALID_ARGUMENT` when the id is refused.
 */
export function validateId(value: unknown, kind: string): string {
  const refuse = (reason: string): never => {
    throw new WsError('INVALID_ARGUMENT', `Invalid ${kind} ${JSON.stringify(value)}: ${reason}`, {
      details: { kind, value },
    });
  };
  if (typeof value !== 'string') return refuse('it must be a string');
  if (value.length === 0) return refuse('it must not be empty');
  if (value.startsWith('.')) return refuse('it must not start with "."');
  if (value.includes('/') || value.includes('\\')) return refuse('it must not contain "/" or "\\"');
  if (hasControlCharacter(value))
    return refuse('it must not contain NUL, newlines or other control characters');
  if (Buffer.byteLength(value, 'utf8') > MAX_ID_BYTES)
    return refuse(`it must be at most ${MAX_ID_BYTES} bytes`);
  return value;
}

/** True when {@link validateId} would accept `value`. */
export function isValidId(value: unknown): value is string {
  try {
    validateId(value, 'id');
    return true;
  } catch {
    return false;
  }
}

/** Returns a random id: 32 lower-case hex characters, as AgentScope's default id factory makes them. */
export function generateId(): string {
  return crypto.randomUUID().replaceAll('-', '');
}
