import { describe, expect, it } from 'vitest';
import { type VendorErrorClass, vendorErrorMapper } from '../src/backend.js';
import { WsError } from '../src/index.js';

/** A vendor error carrying the class its backend would read from it. */
class FakeVendorError extends Error {
  constructor(
    message: string,
    readonly found?: VendorErrorClass,
  ) {
    super(message);
  }
}

const translate = vendorErrorMapper({
  vendor: 'Acme',
  classify: (error) => (error instanceof FakeVendorError ? error.found : undefined),
});

const said = (found: VendorErrorClass | undefined, path?: string, message = 'it broke') =>
  translate(new FakeVendorError(message, found), 'reading x', path);

describe('vendorErrorMapper', () => {
  it('says each kind with one code, one wording and its details on every backend', () => {
    const table = [
      [{ kind: 'missing-file' }, 'NOT_FOUND', '/w/a.txt: no such file or directory', { path: '/w/a.txt' }],
      [
        { kind: 'gone' },
        'BACKEND_UNAVAILABLE',
        'The Acme sandbox is gone (reading x): it broke',
        { lost: true },
      ],
      [
        { kind: 'credentials' },
        'PERMISSION_DENIED',
        'Acme refused the credentials (reading x): it broke',
        {},
      ],
      [
        { kind: 'rate-limited', retryAfterMs: 2000 },
        'BACKEND_UNAVAILABLE',
        'Acme is rate-limiting this key (reading x): it broke',
        { refused: true, retryAfterMs: 2000 },
      ],
      [{ kind: 'timeout' }, 'TIMEOUT', 'Acme did not answer in time (reading x): it broke', {}],
      [
        { kind: 'no-answer' },
        'BACKEND_UNAVAILABLE',
        "Acme did not answer within the request's time limit (reading x); it may have been done: it broke",
        { timedOut: true },
      ],
      [{ kind: 'unreachable' }, 'BACKEND_UNAVAILABLE', 'Acme cannot be reached (reading x): it broke', {}],
      [{ kind: 'failing' }, 'BACKEND_UNAVAILABLE', 'Acme failed to serve reading x: it broke', {}],
    ] as const;
    for (const [found, code, message, details] of table) {
      const error = said(found, found.kind === 'missing-file' ? '/w/a.txt' : undefined);
      expect(error, found.kind).toBeInstanceOf(WsError);
      expect({ code: error.code, message: error.message, details: error.details ?? {} }, found.kind).toEqual({
        code,
        message,
        details,
      });
      expect(error.cause).toBeInstanceOf(FakeVendorError);
    }
  });

  it("passes a backend's own code and message through, with its details and the path", () => {
    const error = said({ code: 'CONFLICT', message: 'taken', details: { httpCode: 409 } }, '/w/b');
    expect(error).toMatchObject({
      code: 'CONFLICT',
      message: 'taken',
      details: { path: '/w/b', httpCode: 409 },
    });
    expect(said({ code: 'CONFLICT', message: 'taken' }).details).toBeUndefined();
  });

  it('reads what the SDK does not mark: file errors by message, the network, else BACKEND_ERROR', () => {
    expect(said(undefined, '/w/d', 'open /w/d: is a directory')).toMatchObject({
      code: 'IS_A_DIRECTORY',
      details: { path: '/w/d' },
    });
    // A file error the service answered as a failure is still the file error.
    expect(said({ kind: 'failing' }, '/w/d', 'write /w/d: permission denied').code).toBe('PERMISSION_DENIED');
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(translate(refused, 'listing')).toMatchObject({ code: 'BACKEND_UNAVAILABLE', details: undefined });
    // A response cut off mid-body (undici's "terminated"), alone or after an RPC code.
    expect(translate(new Error('2: [unknown] terminated'), 'exec sh').code).toBe('BACKEND_UNAVAILABLE');
    expect(translate(new TypeError('terminated'), 'reading').code).toBe('BACKEND_UNAVAILABLE');
    expect(translate(new Error('the job was terminated by the user'), 'reading').code).toBe('BACKEND_ERROR');
    const timedOut = new Error('request failed', {
      cause: new DOMException('signal timed out', 'TimeoutError'),
    });
    expect(translate(timedOut, 'listing')).toMatchObject({
      code: 'BACKEND_UNAVAILABLE',
      details: { timedOut: true },
    });
    expect(translate(new Error('odd'), 'listing')).toMatchObject({
      code: 'BACKEND_ERROR',
      message: 'Acme listing failed: odd',
      details: undefined,
    });
    expect(translate('a string', 'listing', '/w/e')).toMatchObject({
      code: 'BACKEND_ERROR',
      message: 'Acme listing failed: a string',
      details: { path: '/w/e' },
    });
  });

  it('returns a WsError as it is, and uses the message the vendor spec reads', () => {
    const own = new WsError('ABORTED', 'stopped');
    expect(translate(own, 'x')).toBe(own);
    const reading = vendorErrorMapper({
      vendor: 'Acme',
      messageOf: (error) => `body: ${(error as { body: string }).body}`,
      classify: () => ({ kind: 'gone' }),
    });
    expect(reading({ body: 'no sandbox' }, 'x').message).toBe(
      'The Acme sandbox is gone (x): body: no sandbox',
    );
  });
});
