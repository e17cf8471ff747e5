import { validateId } from '@ws/core';
import { expect } from 'vitest';
import { conformanceCase, expectWsError, HOSTILE_IDS } from '../harness.js';
import { describe } from '../suite.js';
import type { AreaContext } from '../target.js';

/** The on-disk layout every backend shares, and the ids that may become path segments. */
export function layoutArea(context: AreaContext): void {
  describe('layout', { decidedBy: 'engine' }, () => {
    conformanceCase(
      context,
      'layout.created',
      'lays out data/, sessions/ and skills/.seed/ at initialize, without .mcp',
      async () => {
        const workspace = await context.create();
        try {
          await workspace.initialize();
          const sandbox = workspace.getSandbox();
          expect(workspace.workdir.startsWith('/')).toBe(true);
          for (const dir of ['data', 'sessions', 'skills/.seed']) {
            expect((await sandbox.stat(`${workspace.workdir}/${dir}`)).type, dir).toBe('directory');
          }
          expect(await sandbox.exists(`${workspace.workdir}/.mcp`)).toBe(false);
        } finally {
          await workspace.close();
        }
      },
    );

    conformanceCase(
      context,
      'layout.reinitialize-keeps',
      're-attaching keeps the layout and its contents',
      async (test) => {
        const workspaceId = context.newId();
        const first = await context.create(workspaceId);
        if (!first.capabilities.persistent) {
          await first.close();
          test.skip(`the ${first.capabilities.backend} workspace declares persistent: false`);
        }
        await first.initialize();
        await first.getSandbox().writeFile('sessions/s/context.jsonl', '{"a":1}\n');
        await first.close();
        const second = await context.create(workspaceId);
        try {
          await second.initialize();
          const text = new TextDecoder().decode(
            await second.getSandbox().readFile('sessions/s/context.jsonl'),
          );
          expect(text).toBe('{"a":1}\n');
        } finally {
          await second.close();
        }
      },
    );

    conformanceCase(
      context,
      'layout.hostile-workspace-ids',
      'refuses workspace ids such as ../x, a/b, .seed, empty and NUL with INVALID_ARGUMENT',
      async () => {
        for (const workspaceId of HOSTILE_IDS) {
          await expectWsError(() => context.target.create({ workspaceId }), 'INVALID_ARGUMENT');
          await expectWsError(() => validateId(workspaceId, 'sessionId'), 'INVALID_ARGUMENT');
        }
        expect(validateId('agent 7 "quoted" ünï', 'agentId')).toBe('agent 7 "quoted" ünï');
      },
      { decidedBy: 'backend' },
    );
  });
}
