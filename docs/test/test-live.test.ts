import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** `node scripts/test-live.mjs …args` with none of the vendors' variables set. */
async function testLive(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
  try {
    const { stdout, stderr } = await run(process.execPath, ['scripts/test-live.mjs', ...args], {
      cwd: root,
      env,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('npm run test:live', () => {
  it.each([
    ['e2b', 'set E2B_API_KEY to run'],
    ['daytona', 'set DAYTONA_API_KEY to run'],
    ['k8s', 'set WS_K8S_REAL_KUBECONFIG to run'],
    ['opensandbox', 'set OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY to run'],
  ])('refuses %s without its variables: one line, exit 2, nothing built or started', async (vendor, says) => {
    const result = await testLive(vendor);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    // One line, and no set-up, build or test run behind it (those print before anything is created).
    expect(result.stderr.split('\n').filter(Boolean)).toEqual([expect.stringContaining(says)]);
    expect(result.stderr).toMatch(/^test:live: /);
  });

  it('names the vendors for no argument or an unknown one', async () => {
    for (const args of [[], ['e2', 'x']]) {
      const result = await testLive(...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('e2b|daytona|k8s|opensandbox');
      expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    }
  });
});
