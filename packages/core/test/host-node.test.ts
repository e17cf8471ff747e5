import type { CompleteSandbox, ExecOptions, ExecResult } from '@ws/core';
import { describe, expect, it } from 'vitest';
import { hostNode, provideNode } from '../src/gateway/host-node.js';

/**
 * A sandbox that answers the platform probe with `probe` and records every command and upload: the
 * branches that decide before anything is placed, which no sandbox on this machine can reach (a
 * musl image, another architecture).
 */
function probed(probe: string) {
  const commands: string[][] = [];
  const uploads: string[] = [];
  const result = (stdout: string): ExecResult =>
    ({
      exitCode: 0,
      stdout: new TextEncoder().encode(stdout),
      stderr: new Uint8Array(),
      stdoutText: stdout,
      stderrText: '',
      timedOut: false,
      truncated: false,
    }) as unknown as ExecResult;
  const sandbox = {
    exec: async (argv: readonly string[], _options?: ExecOptions) => {
      commands.push([...argv]);
      return result(probe);
    },
    writeFile: async (path: string) => {
      uploads.push(path);
    },
  } as unknown as CompleteSandbox;
  return { sandbox, commands, uploads };
}

const host = hostNode();
const options = { home: '/home/user/.ws', describe: 'the image x' };

describe.skipIf(host.machine === undefined)('provideNode', () => {
  it("keeps the sandbox's own node when it has one, running nothing", async () => {
    const { sandbox, commands } = probed('');
    expect(await provideNode(sandbox, { path: '/usr/bin/node', version: 'v22.1.0' }, options)).toEqual({
      path: '/usr/bin/node',
      version: 'v22.1.0',
      source: 'sandbox',
    });
    expect(commands).toEqual([]);
  });

  it('finds a node placed earlier (same version) and uploads nothing', async () => {
    const { sandbox, uploads } = probed(`machine=${host.machine}\nglibc=1\ngzip=1\nplaced=${host.version}\n`);
    expect(await provideNode(sandbox, undefined, options)).toEqual({
      path: `/home/user/.ws/${host.fileName}`,
      version: host.version,
      source: 'host',
    });
    expect(uploads).toEqual([]);
  });

  it('refuses a musl image with what to do, before uploading', async () => {
    const { sandbox, uploads } = probed(`machine=${host.machine}\nmusl=1\ngzip=1\n`);
    const provided = await provideNode(sandbox, undefined, options);
    expect(provided.path).toBeUndefined();
    expect(provided).toMatchObject({
      problem: expect.stringMatching(/musl.*install node 18 or newer in the image x.*apk add nodejs/),
    });
    expect(uploads).toEqual([]);
  });

  it('refuses another architecture, before uploading', async () => {
    const other = host.machine === 'aarch64' ? 'x86_64' : 'aarch64';
    const { sandbox, uploads } = probed(`machine=${other}\nglibc=1\n`);
    expect(await provideNode(sandbox, undefined, options)).toMatchObject({
      problem: expect.stringContaining(
        `runs on ${other} where this host's node is built for ${host.machine}`,
      ),
    });
    expect(uploads).toEqual([]);
  });

  it('uploads in parts of at most 8 MiB, sending a part whose request failed once more, and joins them in order', async () => {
    const { sandbox, commands, uploads } = probed(`machine=${host.machine}\nglibc=1\ngzip=1\n`);
    const sizes: number[] = [];
    let failed = false;
    const write = sandbox.writeFile.bind(sandbox);
    Object.assign(sandbox, {
      writeFile: async (path: string, bytes: Uint8Array) => {
        if (path.endsWith('.part1') && !failed) {
          failed = true;
          throw new Error('fetch failed');
        }
        sizes.push(bytes.byteLength);
        await write(path, bytes);
      },
    });
    await provideNode(sandbox, undefined, options);
    expect(failed).toBe(true);
    expect(uploads.length).toBeGreaterThan(2);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(uploads.map((path) => path.replace(/^.*\.part/, ''))).toEqual(
      uploads.map((_, index) => String(index)),
    );
    const joined = commands.find((argv) => argv[2]?.startsWith('cat '))?.[2] ?? '';
    expect(joined).toContain('| gzip -dc >');
    expect(joined.indexOf('.part0')).toBeLessThan(joined.indexOf(`.part${uploads.length - 1}`));
  }, 60_000);

  it('places the node through the backend when it can, then checks it by running it', async () => {
    const { sandbox, commands, uploads } = probed(`machine=${host.machine}\nglibc=1\n`);
    const placed: string[] = [];
    const provided = await provideNode(sandbox, undefined, {
      ...options,
      place: async (node) => {
        placed.push(node.fileName);
      },
    });
    expect(placed).toEqual([host.fileName]);
    expect(uploads).toEqual([]);
    expect(commands.at(-1)).toEqual([`/home/user/.ws/${host.fileName}`, '--version']);
    // The fake answers the check with the probe's text, not the version: reported as not running.
    expect(provided).toMatchObject({ problem: expect.stringContaining('does not run there') });
  });
});
