import { describe, expect, it } from 'vitest';
import { abortError, fromErrno, throwIfAborted } from '../src/backend.js';
import { isWsError, WsError } from '../src/index.js';

describe('WsError', () => {
  it('carries a code, details and cause', () => {
    const cause = new Error('low level');
    const error = new WsError('NOT_FOUND', 'missing', { cause, details: { path: '/x' } });
    expect(error.code).toBe('NOT_FOUND');
    expect(error.details).toEqual({ path: '/x' });
    expect(error.cause).toBe(cause);
    expect(error.name).toBe('WsError');
    expect(error).toBeInstanceOf(Error);
  });

  it('is recognised across copies of the package by its Symbol.for brand', () => {
    // What a second copy of @ws/core would produce: another class, the same global symbol.
    const brand: unique symbol = Symbol.for('@ws/core.WsError');
    class OtherCopy extends Error {
      readonly code = 'TIMEOUT';
      readonly [brand] = true;
    }
    const foreign = new OtherCopy('from elsewhere');
    expect(isWsError(foreign)).toBe(true);
    expect(isWsError(foreign, 'TIMEOUT')).toBe(true);
    expect(isWsError(foreign, 'NOT_FOUND')).toBe(false);
    expect(foreign instanceof WsError).toBe(true);
    expect(isWsError(new Error('plain'))).toBe(false);
    expect(isWsError({ code: 'TIMEOUT' })).toBe(false);
    expect(isWsError(null)).toBe(false);
  });

  it('maps errno codes and keeps the original as cause', () => {
    const errno = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' });
    const wrapped = fromErrno(errno, 'Reading /x failed', { path: '/x' });
    expect(wrapped.code).toBe('NOT_FOUND');
    expect(wrapped.cause).toBe(errno);
    expect(wrapped.details).toMatchObject({ path: '/x', errno: 'ENOENT' });
    expect(fromErrno(Object.assign(new Error('x'), { code: 'EISDIR' }), 'm').code).toBe('IS_A_DIRECTORY');
    expect(fromErrno(new Error('odd'), 'm').code).toBe('BACKEND_ERROR');
    const already = new WsError('CONFLICT', 'c');
    expect(fromErrno(already, 'm')).toBe(already);
  });

  it('turns a fired signal into ABORTED with its reason', () => {
    expect(() => throwIfAborted(undefined)).not.toThrow();
    expect(() => throwIfAborted(new AbortController().signal)).not.toThrow();
    const signal = AbortSignal.abort('why');
    expect(() => throwIfAborted(signal)).toThrow(WsError);
    expect(abortError(signal).cause).toBe('why');
  });
});
