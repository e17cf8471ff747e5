import { expect } from 'vitest';
import { conformanceCase, expectWsError } from '../harness.js';
import { describe } from '../suite.js';
import type { AreaContext } from '../target.js';

/**
 * What the engine's lifecycle decides alone, whatever the backend: its state machine (ready once,
 * closed once, DISPOSED after, an abort before the start), `reset()` of the managed layout and the
 * instructions. The backend decides the rest: what outlives a close, re-attach and destroy.
 */
const ENGINE = { decidedBy: 'engine' } as const;

/** Lifecycle: initialize, close, dispose, reset, destroy and re-attach. */
export function lifecycleArea(context: AreaContext): void {
  describe('lifecycle', { decidedBy: 'backend' }, () => {
    conformanceCase(
      context,
      'lifecycle.not-ready',
      'refuses sandbox access before initialize with NOT_READY',
      async () => {
        const workspace = await context.create();
        expect(workspace.state).toBe('created');
        await expectWsError(() => workspace.getSandbox(), 'NOT_READY');
        await workspace.close();
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.initialize-idempotent',
      'initializes once under repeated and concurrent calls',
      async () => {
        const workspace = await context.create();
        try {
          await Promise.all([workspace.initialize(), workspace.initialize(), workspace.initialize()]);
          expect(workspace.state).toBe('ready');
          const sandbox = workspace.getSandbox();
          await workspace.initialize();
          expect(workspace.getSandbox()).toBe(sandbox);
          expect((await sandbox.exec(['true'])).exitCode).toBe(0);
        } finally {
          await workspace.close();
        }
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.close-idempotent',
      'closes idempotently, concurrently too',
      async () => {
        const workspace = await context.create();
        await workspace.initialize();
        await Promise.all([workspace.close(), workspace.close()]);
        await workspace.close();
        expect(workspace.state).toBe('closed');
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.disposed-after-close',
      'throws DISPOSED from every method after close',
      async () => {
        const workspace = await context.create();
        await workspace.initialize();
        const sandboxBefore = workspace.getSandbox();
        expect(sandboxBefore.workdir).toBe(workspace.workdir);
        await workspace.close();
        await expectWsError(() => workspace.getSandbox(), 'DISPOSED');
        await expectWsError(() => workspace.initialize(), 'DISPOSED');
        await expectWsError(() => workspace.reset(), 'DISPOSED');
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.async-dispose',
      'closes through Symbol.asyncDispose',
      async () => {
        const workspace = await context.create();
        await workspace.initialize();
        await workspace[Symbol.asyncDispose]();
        expect(workspace.state).toBe('closed');
        await expectWsError(() => workspace.getSandbox(), 'DISPOSED');
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.close-before-initialize',
      'closes a workspace that was never initialized',
      async () => {
        const workspace = await context.create();
        await workspace.close();
        await expectWsError(() => workspace.initialize(), 'DISPOSED');
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.abort-initialize',
      'rejects an aborted initialize with ABORTED and stays usable',
      async () => {
        const workspace = await context.create();
        try {
          await expectWsError(() => workspace.initialize({ signal: AbortSignal.abort() }), 'ABORTED');
          expect(workspace.state).toBe('created');
          await workspace.initialize();
          expect(workspace.state).toBe('ready');
        } finally {
          await workspace.close();
        }
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.reattach',
      'keeps files across close and re-attaches by id',
      async (test) => {
        const workspaceId = context.newId();
        const first = await context.create(workspaceId);
        if (!first.capabilities.persistent) {
          await first.close();
          test.skip(`the ${first.capabilities.backend} workspace declares persistent: false`);
        }
        await first.initialize();
        await first.getSandbox().writeFile('kept/note.txt', 'still here');
        await first.close();
        const second = await context.create(workspaceId);
        try {
          await second.initialize();
          expect(second.workdir).toBe(first.workdir);
          expect(new TextDecoder().decode(await second.getSandbox().readFile('kept/note.txt'))).toBe(
            'still here',
          );
        } finally {
          await second.close();
        }
      },
    );

    conformanceCase(
      context,
      'lifecycle.persistence-as-declared',
      'files outlive close() exactly when the workspace declares persistent: true',
      async () => {
        const workspaceId = context.newId();
        const first = await context.create(workspaceId);
        await first.initialize();
        const persistent = first.capabilities.persistent;
        await first.getSandbox().writeFile('kept/declared.txt', 'written before close');
        await first.close();
        const second = await context.create(workspaceId);
        try {
          await second.initialize();
          expect(
            await second.getSandbox().exists('kept/declared.txt'),
            `a new object on the id, the first declaring persistent: ${persistent}`,
          ).toBe(persistent);
        } finally {
          await second.close();
        }
      },
    );

    conformanceCase(
      context,
      'lifecycle.reset',
      "reset clears the managed layout and keeps the agent's own files",
      async () => {
        const workspace = await context.create();
        try {
          await workspace.initialize();
          const sandbox = workspace.getSandbox();
          await sandbox.writeFile('.mcp', '{"version":2,"mcps":{}}');
          await sandbox.writeFile('data/blob.bin', 'x');
          await sandbox.writeFile('sessions/s1/context.jsonl', '{}\n');
          await sandbox.writeFile('skills/default/s/SKILL.md', '---\nname: s\ndescription: d\n---\n');
          await sandbox.writeFile('project/main.txt', 'mine');
          await workspace.reset();
          expect(await sandbox.exists('.mcp')).toBe(false);
          expect(await sandbox.exists('data/blob.bin')).toBe(false);
          expect(await sandbox.exists('sessions/s1')).toBe(false);
          expect(await sandbox.exists('skills/default')).toBe(false);
          expect((await sandbox.stat('skills/.seed')).type).toBe('directory');
          expect((await sandbox.stat('data')).type).toBe('directory');
          expect(new TextDecoder().decode(await sandbox.readFile('project/main.txt'))).toBe('mine');
        } finally {
          await workspace.close();
        }
      },
      ENGINE,
    );

    conformanceCase(
      context,
      'lifecycle.destroy',
      'destroy removes what the workspace owned',
      async (test) => {
        const workspaceId = context.newId();
        const workspace = await context.create(workspaceId);
        await workspace.initialize();
        await workspace.getSandbox().writeFile('doomed.txt', 'x');
        // Closed first, so that on a persistent backend the file is known to outlive a close.
        await workspace.close();
        const kept = await context.create(workspaceId);
        await kept.initialize();
        const persistent = kept.capabilities.persistent;
        if (persistent) expect(await kept.getSandbox().exists('doomed.txt')).toBe(true);
        await kept.destroy();
        expect(kept.state).toBe('closed');
        await kept.destroy();
        const leftovers = await context.target.leftovers?.(workspaceId);
        if (leftovers !== undefined) expect(leftovers).toEqual([]);
        if (!persistent) {
          if (leftovers === undefined)
            test.skip(
              'a workspace that keeps nothing past close, and a target that cannot look for leftovers',
            );
          return;
        }
        const again = await context.create(workspaceId);
        try {
          await again.initialize();
          expect(await again.getSandbox().exists('doomed.txt')).toBe(false);
        } finally {
          await again.destroy();
        }
      },
    );

    conformanceCase(
      context,
      'lifecycle.instructions',
      'describes the backend and the workdir in a <workspace> fragment',
      async () => {
        const workspace = await context.create();
        try {
          await workspace.initialize();
          const instructions = workspace.getInstructions();
          expect(instructions.startsWith('<workspace>')).toBe(true);
          expect(instructions.trimEnd().endsWith('</workspace>')).toBe(true);
          expect(instructions).toContain(workspace.workdir);
          expect(instructions).not.toMatch(/\{(backend|workdir)\}/);
        } finally {
          await workspace.close();
        }
      },
      ENGINE,
    );
  });
}
