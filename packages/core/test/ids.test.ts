import { describe, expect, it } from 'vitest';
import { MAX_ID_BYTES } from '../src/backend.js';
import { generateId, isValidId, validateId } from '../src/index.js';

describe('validateId', () => {
  it.each([
    ['../x'],
    ['a/b'],
    ['.seed'],
    ['.'],
    ['..'],
    [''],
    ['nul\0'],
    ['back\\slash'],
    ['line\nbreak'],
    ['tab\t'],
    ['del\u007f'],
    ['x'.repeat(MAX_ID_BYTES + 1)],
    ['é'.repeat(128)],
  ])('refuses %j with INVALID_ARGUMENT', (value) => {
    expect(() => validateId(value, 'sessionId')).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(isValidId(value)).toBe(false);
  });

  it('refuses non-strings', () => {
    for (const value of [undefined, null, 7, {}, ['a']]) {
      expect(() => validateId(value, 'agentId')).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
  });

  it.each([
    ['default'],
    ['agent-7_x'],
    ['a.b'],
    ['with space'],
    ['"quoted"'],
    ['名前'],
    ['-dash'],
    ['x'.repeat(MAX_ID_BYTES)],
  ])('accepts %j unchanged', (value) => {
    expect(validateId(value, 'agentId')).toBe(value);
  });

  it('names the kind and the value in the message', () => {
    expect(() => validateId('../x', 'sessionId')).toThrow(/sessionId "..\/x"/);
  });

  it('generates 32-hex-digit ids that validate', () => {
    const id = generateId();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(validateId(id, 'workspaceId')).toBe(id);
    expect(generateId()).not.toBe(id);
  });
});
