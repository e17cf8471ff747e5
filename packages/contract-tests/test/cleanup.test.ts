import { describe, expect, it, vi } from 'vitest';
import { closeAllWithin } from '../src/cleanup.js';

describe('closeAllWithin', () => {
  it('names the workspace whose close hangs, reports one that fails, each within its own deadline', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      let closed = false;
      const failure = await closeAllWithin(
        [
          {
            id: 'closes',
            close: async () => {
              closed = true;
            },
          },
          { id: 'hangs', close: () => new Promise<void>(() => {}) },
          { id: 'fails', close: () => Promise.reject(new Error('its sandbox is gone')) },
        ],
        200,
      ).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(closed).toBe(true);
      expect(failure?.message).toContain('workspace hangs: close() still running after 0.2 s');
      expect(failure?.message).not.toContain('closes');
      expect(failure?.message).not.toContain('fails');
      expect(String(warn.mock.calls[0]?.[0])).toContain('workspace fails: its sandbox is gone');
    } finally {
      warn.mockRestore();
    }
  });

  it('resolves when every close does', async () => {
    await expect(closeAllWithin([{ id: 'a', close: async () => {} }], 1_000)).resolves.toBeUndefined();
  });
});
