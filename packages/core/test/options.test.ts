import { describe, expect, it } from 'vitest';
import { checkOptionKeys, type OptionKeys, refuseRenamedOptions, splitOptions } from '../src/backend.js';
import { type CommonWorkspaceOptions, isWsError } from '../src/index.js';

interface TestOptions extends CommonWorkspaceOptions {
  hostWorkdir?: string;
  client?: object;
}

const TEST_KEYS: OptionKeys<TestOptions> = { hostWorkdir: true, client: true };

const failure = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error as Error & { details?: unknown };
  }
  return undefined;
};
const check = (options: object | undefined, hints?: Record<string, string>) =>
  failure(() => checkOptionKeys<TestOptions>('TestWorkspace', options as TestOptions, TEST_KEYS, hints));

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
    expect(renamed?.details).toEqual({ option: 'workdir', use: 'hostWorkdir' });
    expect(check({ connectionConfig: {} })?.message).toBe(
      'TestWorkspace has no option "connectionConfig"; use "client"',
    );
    // A rename that points at an option this class lacks is not suggested.
    expect(check({ hostCacheDir: '/x' })?.message).toBe('TestWorkspace has no option "hostCacheDir"');
    expect(check({ autoStopInterval: 5 })?.message).toBe('TestWorkspace has no option "autoStopInterval"');
    expect(check({ nonsense: 1 })?.message).toBe('TestWorkspace has no option "nonsense"');
    // A misspelling, two edits away at most (letter case aside), names the option it most likely meant.
    expect(check({ clinet: {} })?.message).toBe('TestWorkspace has no option "clinet"; use "client"');
    expect(check({ hostWorkDir: '/x' })?.details).toEqual({ option: 'hostWorkDir', use: 'hostWorkdir' });
    expect(check({ skilPath: [] })?.message).toBe('TestWorkspace has no option "skilPath"; use "skillPaths"');
    expect(check({ sig: 1 })?.message).toBe('TestWorkspace has no option "sig"');
    expect(isWsError(check('text' as unknown as object), 'INVALID_ARGUMENT')).toBe(true);
  });

  it("says what to use for a key the class refuses on purpose (the class's hint)", () => {
    const refused = check({ timeoutMs: 5 }, { timeoutMs: 'there is no time limit here' });
    expect(refused?.message).toBe('TestWorkspace has no option "timeoutMs"; there is no time limit here');
    expect(refused?.details).toEqual({ option: 'timeoutMs' });
  });

  it('is checked by the compiler: a key table missing an option, or naming one the options lack, fails', () => {
    // @ts-expect-error `client` is an option of TestOptions and missing from the table.
    const missing: OptionKeys<TestOptions> = { hostWorkdir: true };
    // @ts-expect-error `volume` is no option of TestOptions.
    const extra: OptionKeys<TestOptions> = { hostWorkdir: true, client: true, volume: true };
    // @ts-expect-error a common option is the engine's, not the backend's.
    const common: OptionKeys<TestOptions> = { hostWorkdir: true, client: true, workspaceId: true };
    expect([missing, extra, common].map((table) => Object.keys(table).length)).toEqual([1, 3, 3]);
  });
});

describe('splitOptions', () => {
  it("checks the keys and hands the common options to the engine and the backend's own (set ones) to it", () => {
    const client = {};
    const options: TestOptions = { workspaceId: 'a', searchMode: 'posix', client, hostWorkdir: undefined };
    const { common, own } = splitOptions('TestWorkspace', options, TEST_KEYS);
    expect(common).toEqual({ workspaceId: 'a', searchMode: 'posix' });
    expect(own).toEqual({ client });
    expect(Object.keys(own)).toEqual(['client']);
    expect(own.client).toBe(client);
    expect(splitOptions<TestOptions>('TestWorkspace', undefined, TEST_KEYS)).toEqual({ common: {}, own: {} });
    const refused = failure(() => splitOptions('TestWorkspace', { docker: {} } as TestOptions, TEST_KEYS));
    expect(refused?.message).toBe('TestWorkspace has no option "docker"; use "client"');
  });
});

describe('refuseRenamedOptions', () => {
  it('refuses an earlier name that is set, naming the new one, and lets everything else through', () => {
    const refused = failure(() =>
      refuseRenamedOptions('gcTest', { timeoutMs: 5 }, { timeoutMs: 'startTimeoutMs' }),
    );
    expect(isWsError(refused, 'INVALID_ARGUMENT')).toBe(true);
    expect(refused?.message).toBe('gcTest has no option "timeoutMs"; use "startTimeoutMs"');
    expect(refused?.details).toEqual({ option: 'timeoutMs', use: 'startTimeoutMs' });
    expect(refuseRenamedOptions('gcTest', { timeoutMs: undefined, other: 1 }, { timeoutMs: 'x' })).toBe(
      undefined,
    );
    expect(refuseRenamedOptions('gcTest', undefined, { timeoutMs: 'x' })).toBe(undefined);
  });
});
