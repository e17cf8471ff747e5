import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isWsError, WorkspaceManager } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { gcLocal, LocalWorkspace } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-local-manager-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const built = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'index.js');

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A pid that belonged to a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('close', resolve));
  return child.pid as number;
}

describe('WorkspaceManager over local workspaces', () => {
  it('opens exactly one workspace per key for 200 concurrent acquires of 10 keys', async () => {
    const root = join(base, 'many');
    const created: string[] = [];
    await using manager = new WorkspaceManager({
      factory: (workspaceId) => {
        created.push(workspaceId);
        return new LocalWorkspace({ workspaceId, hostWorkdir: join(root, workspaceId) });
      },
    });
    const opened: string[] = [];
    manager.on('open', (event) => opened.push(event.workspaceId));
    const leases = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        manager.acquire({ userId: `user-${index % 10}`, agentId: 'coder' }),
      ),
    );
    expect(created).toHaveLength(10);
    expect(new Set(created).size).toBe(10);
    expect(opened.sort()).toEqual([...created].sort());
    expect(new Set(leases.map((lease) => lease.workspace)).size).toBe(10);
    expect(readdirSync(root).sort()).toEqual([...created].sort());
    for (const [index, lease] of leases.entries())
      expect(lease.workspaceId).toBe(
        manager.assignWorkspaceId({ userId: `user-${index % 10}`, agentId: 'coder' }),
      );
    expect(manager.stats()).toMatchObject({ open: 10, leased: 10 });
  });

  it('does not delay the other keys while one creation is slow', async () => {
    const root = join(base, 'slow');
    const slow = gate();
    await using manager = new WorkspaceManager({
      factory: async (workspaceId) => {
        if (workspaceId === 'slow') await slow.promise;
        return new LocalWorkspace({ workspaceId, hostWorkdir: join(root, workspaceId) });
      },
    });
    const order: string[] = [];
    const ids = ['slow', ...Array.from({ length: 9 }, (_, index) => `fast-${index}`)];
    const all = Array.from({ length: 100 }, (_, index) => {
      const workspaceId = ids[index % ids.length] as string;
      return manager.acquire({ workspaceId }).then((lease) => {
        order.push(workspaceId);
        return lease;
      });
    });
    const fast = all.filter((_, index) => index % ids.length !== 0);
    await Promise.all(fast);
    expect(order).toHaveLength(90);
    expect(order).not.toContain('slow');
    slow.open();
    await Promise.all(all);
    expect(order.slice(90)).toEqual(Array(10).fill('slow'));
  });
});

describe('gcLocal', () => {
  it('clears what killed writers left, and keeps young ones, live writers and the files themselves', async () => {
    if (!existsSync(built)) throw new Error(`${built} is missing: build the packages first (npm test does)`);
    const workdir = join(base, 'reaped');
    // A writer killed in the middle of a streamed write leaves its temporary file behind.
    const script = `
      import { LocalWorkspace } from ${JSON.stringify(built)};
      const workspace = await LocalWorkspace.open({ hostWorkdir: ${JSON.stringify(workdir)} });
      await workspace.getSandbox().writeFile('kept.txt', 'kept');
      const { readdirSync } = await import('node:fs');
      async function* endless() {
        yield new Uint8Array(1024);
        // Killed once the temporary file exists (the writer may pull this chunk before creating it).
        while (!readdirSync(${JSON.stringify(workdir)}).some((name) => /^\\.ws-.*\\.tmp$/.test(name)))
          await new Promise((resolve) => setTimeout(resolve, 5));
        process.kill(process.pid, 'SIGKILL');
        await new Promise(() => {});
      }
      await workspace.getSandbox().writeStream('big.bin', endless());
    `;
    await new Promise((resolve) =>
      spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' }).once(
        'close',
        resolve,
      ),
    );
    const killed = readdirSync(workdir).filter((name) => /^\.ws-.*\.tmp$/.test(name));
    expect(killed).toHaveLength(1);

    const dead = await deadPid();
    const session = join(workdir, 'sessions', 's1');
    mkdirSync(session, { recursive: true });
    const planted = {
      deadAppend: join(session, `.append-${dead}-abc-def`),
      deadRebuild: join(session, `context.jsonl.tmp-${dead}-abc-def`),
      liveAppend: join(session, `.append-${process.pid}-abc-def`),
      youngWrite: join(workdir, '.ws-0123456789ab.tmp'),
      equipping: join(workdir, 'skills', `coder.equipping-${dead}-abc`),
      lookalike: join(workdir, 'notes.tmp'),
    };
    for (const [name, path] of Object.entries(planted)) {
      if (name === 'equipping') mkdirSync(join(path, 'half'), { recursive: true });
      else writeFileSync(path, name);
    }
    const hourAgo = new Date(Date.now() - 3_600_000);
    for (const path of [
      join(workdir, killed[0] as string),
      planted.deadAppend,
      planted.deadRebuild,
      planted.liveAppend,
      planted.equipping,
      planted.lookalike,
    ])
      utimesSync(path, hourAgo, hourAgo);

    const dry = await gcLocal({ roots: [base], olderThanMs: 600_000, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.removed).toHaveLength(4);
    expect(existsSync(planted.deadAppend)).toBe(true);

    const report = await gcLocal({ roots: [base], olderThanMs: 600_000 });
    expect(report.removed.map((resource) => resource.name).sort()).toEqual(
      [join(workdir, killed[0] as string), planted.deadAppend, planted.deadRebuild, planted.equipping].sort(),
    );
    expect(report.kept.map((resource) => [resource.name, resource.reason]).sort()).toEqual(
      [
        [planted.liveAppend, 'in-use'],
        [planted.youngWrite, 'young'],
      ].sort(),
    );
    expect(report.listed).toHaveLength(6);
    for (const path of [
      planted.deadAppend,
      planted.deadRebuild,
      planted.equipping,
      join(workdir, killed[0] as string),
    ])
      expect(existsSync(path), path).toBe(false);
    for (const path of [planted.liveAppend, planted.youngWrite, planted.lookalike, join(workdir, 'kept.txt')])
      expect(existsSync(path), path).toBe(true);
  });

  it('refuses an owner, a missing root and a bad age', async () => {
    for (const options of [
      { roots: [base], olderThanMs: 0, owner: 'someone' },
      { roots: [join(base, 'missing')], olderThanMs: 0 },
      { roots: [base], olderThanMs: -1 },
      { roots: [base], olderThanMs: Number.NaN },
    ]) {
      const error = await gcLocal(options).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(isWsError(error), JSON.stringify(options)).toBe(true);
    }
  });
});
