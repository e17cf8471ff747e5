import { describe, expect, it } from 'vitest';
import { anyDebugEnabled, debugEnabled } from '../src/backend/debug-log.js';

describe('DEBUG patterns', () => {
  it.each([
    ['ws:*', 'ws:command', true],
    ['ws:*', 'wsx:command', false],
    ['*', 'ws:gateway', true],
    ['ws:command', 'ws:command', true],
    ['ws:command', 'ws:commands', false],
    ['ws:gate*', 'ws:gateway', true],
    ['ws:*,-ws:file', 'ws:file', false],
    ['ws:*,-ws:file', 'ws:tool', true],
    ['-ws:file ws:*', 'ws:file', false],
    ['express:*  ws:tool', 'ws:tool', true],
    ['*:tool', 'ws:tool', true],
    ['w*:t*l', 'ws:tool', true],
    ['w*:t*l', 'ws:tools', false],
    ['', 'ws:tool', false],
  ])('%j switches %s: %s', (patterns, namespace, expected) => {
    expect(debugEnabled(namespace, patterns)).toBe(expected);
  });

  it('says whether any of the namespaces is on', () => {
    expect(anyDebugEnabled('express:*')).toBe(false);
    expect(anyDebugEnabled('ws:retry')).toBe(true);
    expect(anyDebugEnabled('*')).toBe(true);
    expect(anyDebugEnabled(undefined)).toBe(false);
  });
});
