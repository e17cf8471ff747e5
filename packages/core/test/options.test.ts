import { describe, expect, it } from 'vitest';
import { checkOptionKeys } from '../src/backend.js';
import { isWsError } from '../src/index.js';

const check = (options: object | undefined) => {
  try {
    checkOptionKeys('TestWorkspace', options, ['hostWorkdir', 'client']);
  } catch (error) {
    return error as Error;
  }
  return undefined;
};

describe('checkOptionKeys', () => {
  it('accepts the common keys, the backend keys and signal', () => {
    expect(
      check({ workspaceId: 'a', skillPaths: [], hostWorkdir: '/x', client: {}, signal: undefined }),
    ).toBe(undefined);
    expect(check(undefined)).toBe(undefined);
  });

  it('refuses an unknown key with INVALID_ARGUMENT, naming the key to use where there is one', () => {
    const renamed = check({ workdir: '/x' });
    expect(isWsError(renamed, 'INVALID_ARGUMENT')).toBe(true);
    expect(renamed?.message).toBe('TestWorkspace has no option "workdir"; use "hostWorkdir"');
    expect((renamed as { details?: unknown }).details).toEqual({ option: 'workdir', use: 'hostWorkdir' });
    // A rename that points at an option this class lacks is not suggested.
    expect(check({ hostCacheDir: '/x' })?.message).toBe('TestWorkspace has no option "hostCacheDir"');
    expect(check({ nonsense: 1 })?.message).toBe('TestWorkspace has no option "nonsense"');
    expect(isWsError(check('text' as unknown as object), 'INVALID_ARGUMENT')).toBe(true);
  });
});
