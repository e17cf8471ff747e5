import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CompleteSandbox } from '@ws/core';
import { expect } from 'vitest';
import { makeTar, makeTarGz, makeZip, skillMarkdown } from '../archives.js';
import { conformanceCase, expectWsError } from '../harness.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

const names = (skills: readonly { name: string }[]) => skills.map((skill) => skill.name).sort();

/** Skills: seeding, per-agent partitions, installs from folders and archives, removal and purge. */
export function skillsArea(context: AreaContext): void {
  describe('skills', { decidedBy: 'engine' }, () => {
    let host: string;
    let workspace: WorkspaceUnderTest;
    let sandbox: CompleteSandbox;
    let workspaceId: string;
    let seedA: string;
    let seedB: string;

    const hostSkill = (
      folder: string,
      name: string,
      description = `${name} does things`,
      extra: Record<string, string> = {},
    ) => {
      const dir = join(host, folder);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'SKILL.md'), skillMarkdown(name, description));
      for (const [file, content] of Object.entries(extra)) {
        mkdirSync(join(dir, file, '..'), { recursive: true });
        writeFileSync(join(dir, file), content);
      }
      return dir;
    };

    beforeAll(async () => {
      host = mkdtempSync(join(tmpdir(), 'ws-conformance-skills-'));
      seedA = hostSkill('seed-alpha', 'alpha', 'the alpha skill', {
        'scripts/run.sh': '#!/bin/sh\necho alpha\n',
      });
      chmodSync(join(seedA, 'scripts/run.sh'), 0o755);
      seedB = hostSkill('seed-beta', 'beta');
      const invalid = join(host, 'no-description');
      mkdirSync(invalid);
      writeFileSync(join(invalid, 'SKILL.md'), '---\nname: broken\n---\nbody\n');
      workspaceId = context.newId();
      workspace = await context.create(workspaceId, {
        skillPaths: [seedA, seedB, invalid, join(host, 'missing')],
      });
      await workspace.initialize();
      sandbox = workspace.getSandbox();
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await workspace?.close();
      rmSync(host, { recursive: true, force: true });
    }, context.caseTimeoutMs);

    conformanceCase(
      context,
      'skills.seed',
      'seeds skills/.seed from skillPaths and equips the default partition from it',
      async () => {
        const seed = (await sandbox.list(`${workspace.workdir}/skills/.seed`))
          .map((entry) => entry.name)
          .sort();
        expect(seed).toEqual(['seed-alpha', 'seed-beta']);
        const skills = await workspace.listSkills();
        expect(names(skills)).toEqual(['alpha', 'beta']);
        const alpha = skills.find((skill) => skill.name === 'alpha')!;
        expect(alpha).toMatchObject({
          description: 'the alpha skill',
          dir: `${workspace.workdir}/skills/default/seed-alpha`,
          markdown: '# alpha\n\nUse it well.\n',
        });
        // Written by this case a moment ago (the sandbox's clock may differ from the host's a little).
        expect(Math.abs(Date.now() - alpha.updatedAt)).toBeLessThan(10 * 60_000);
        const run = await sandbox.exec([`${alpha.dir}/scripts/run.sh`]);
        expect(run.stdoutText).toBe('alpha\n');
        expect(workspace.warnings?.some((warning) => warning.includes('no-description'))).toBe(true);
      },
    );

    conformanceCase(
      context,
      'skills.partitions',
      'keeps each agent in its own partition, and a deleted seed skill stays deleted',
      async () => {
        const added = await workspace.addSkill(hostSkill('only-a', 'a-skill'), { agentId: 'agent-a' });
        expect(added.dir).toBe(`${workspace.workdir}/skills/agent-a/only-a`);
        expect(names(await workspace.listSkills({ agentId: 'agent-a' }))).toEqual([
          'a-skill',
          'alpha',
          'beta',
        ]);
        expect(names(await workspace.listSkills({ agentId: 'agent-b' }))).toEqual(['alpha', 'beta']);
        expect(names(await workspace.listSkills())).toEqual(['alpha', 'beta']);
        await workspace.removeSkill('alpha', { agentId: 'agent-a' });
        expect(names(await workspace.listSkills({ agentId: 'agent-a' }))).toEqual(['a-skill', 'beta']);
        expect(names(await workspace.listSkills({ agentId: 'agent-b' }))).toEqual(['alpha', 'beta']);
        expect(await sandbox.exists(`${workspace.workdir}/skills/.seed/seed-alpha/SKILL.md`)).toBe(true);
        if (workspace.capabilities.persistent) {
          const again = await context.create(workspaceId, { skillPaths: [seedA, seedB] });
          try {
            await again.initialize();
            expect(names(await again.listSkills({ agentId: 'agent-a' }))).toEqual(['a-skill', 'beta']);
          } finally {
            await again.close();
          }
        }
      },
    );

    conformanceCase(
      context,
      'skills.add-folder',
      'installs a host folder, picks a free name on clash, refuses invalid skills',
      async () => {
        const source = hostSkill('tool-kit', 'toolkit', 'first', { 'ref/notes.md': 'notes' });
        const first = await workspace.addSkill(source, { agentId: 'adder' });
        expect(first.dir).toBe(`${workspace.workdir}/skills/adder/tool-kit`);
        expect(new TextDecoder().decode(await sandbox.readFile(`${first.dir}/ref/notes.md`))).toBe('notes');
        const second = await workspace.addSkill(hostSkill('other/tool-kit', 'toolkit-2'), {
          agentId: 'adder',
        });
        expect(second.dir).toBe(`${workspace.workdir}/skills/adder/tool-kit-1`);
        const empty = join(host, 'empty-folder');
        mkdirSync(empty);
        await expectWsError(() => workspace.addSkill(empty, { agentId: 'adder' }), 'INVALID_ARGUMENT');
        await expectWsError(
          () => workspace.addSkill(join(host, 'no-description'), { agentId: 'adder' }),
          'INVALID_ARGUMENT',
        );
        const escaping = hostSkill('escaping', 'escaping');
        symlinkSync('/etc/passwd', join(escaping, 'passwd'));
        await expectWsError(() => workspace.addSkill(escaping, { agentId: 'adder' }), 'INVALID_ARGUMENT');
        expect(names(await workspace.listSkills({ agentId: 'adder' }))).toEqual([
          'alpha',
          'beta',
          'toolkit',
          'toolkit-2',
        ]);
        const leftovers = (await sandbox.list(workspace.workdir)).filter((entry) =>
          entry.name.startsWith('.skill-staging'),
        );
        expect(leftovers).toEqual([]);
      },
    );

    conformanceCase(
      context,
      'skills.add-archive',
      'installs zip, tar and tar.gz archives, flat or with one folder',
      async () => {
        const agentId = 'archives';
        const flat = [
          { path: 'SKILL.md', content: skillMarkdown('flat-zip', 'from a flat zip') },
          { path: 'lib/a.txt', content: 'a' },
        ];
        const zipped = await workspace.addSkill({ format: 'zip', data: makeZip(flat) }, { agentId });
        expect(zipped.dir).toBe(`${workspace.workdir}/skills/${agentId}/flat-zip`);
        expect(new TextDecoder().decode(await sandbox.readFile(`${zipped.dir}/lib/a.txt`))).toBe('a');
        const foldered = [
          { path: 'packed/', directory: true },
          { path: 'packed/SKILL.md', content: skillMarkdown('packed-tar', 'from a tar') },
          { path: 'packed/link-to-doc', link: 'docs/doc.md' },
          { path: 'packed/docs/doc.md', content: 'doc' },
        ];
        const tarred = await workspace.addSkill({ format: 'tar', data: makeTar(foldered) }, { agentId });
        expect(tarred.dir).toBe(`${workspace.workdir}/skills/${agentId}/packed`);
        expect(new TextDecoder().decode(await sandbox.readFile(`${tarred.dir}/link-to-doc`))).toBe('doc');
        async function* chunks(data: Uint8Array): AsyncIterable<Uint8Array> {
          for (let offset = 0; offset < data.byteLength; offset += 100)
            yield data.subarray(offset, offset + 100);
        }
        const gz = await workspace.addSkill(
          { format: 'tar.gz', data: chunks(makeTarGz(foldered)), dirName: 'renamed' },
          { agentId },
        );
        expect(gz.dir).toBe(`${workspace.workdir}/skills/${agentId}/renamed`);
        const clash = await workspace.addSkill({ format: 'tar', data: makeTar(foldered) }, { agentId });
        expect(clash.dir).toBe(`${workspace.workdir}/skills/${agentId}/packed-1`);
        expect(names(await workspace.listSkills({ agentId }))).toEqual([
          'alpha',
          'beta',
          'flat-zip',
          'packed-tar',
          'packed-tar',
          'packed-tar',
        ]);
      },
    );

    conformanceCase(
      context,
      'skills.unsafe-archives',
      'refuses escaping members and links, bombs and archives without a skill, leaving nothing',
      async () => {
        const agentId = 'unsafe';
        const before = names(await workspace.listSkills({ agentId }));
        const skill = { path: 'SKILL.md', content: skillMarkdown('evil', 'evil') };
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'tar', data: makeTar([skill, { path: '../escape.txt', content: 'x' }]) },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'zip', data: makeZip([skill, { path: '../../escape.txt', content: 'x' }]) },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'tar', data: makeTar([skill, { path: 'out', link: '../../..' }]) },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'tar', data: makeTar([skill, { path: 'abs', link: '/etc' }]) },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              {
                format: 'tar',
                data: makeTar([skill, { path: 'dir', link: 'sub' }, { path: 'dir/x', content: 'x' }]),
              },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        const big = { path: 'big.bin', content: 'z'.repeat(200_000) };
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'tar.gz', data: makeTarGz([skill, big]) },
              { agentId, maxExtractedBytes: 100_000 },
            ),
          'LIMIT_EXCEEDED',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'zip', data: makeZip([skill, big]) },
              { agentId, maxExtractedBytes: 100_000 },
            ),
          'LIMIT_EXCEEDED',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'zip', data: makeZip([{ path: 'README.md', content: 'no skill' }]) },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              {
                format: 'zip',
                data: makeZip([
                  { path: 'one/SKILL.md', content: skillMarkdown('one', 'one') },
                  { path: 'two/SKILL.md', content: skillMarkdown('two', 'two') },
                ]),
              },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addSkill(
              { format: 'tar', data: new TextEncoder().encode('not a tar archive at all') },
              { agentId },
            ),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () => workspace.addSkill({ format: 'zip', data: makeZip([skill]), dirName: '../x' }, { agentId }),
          'INVALID_ARGUMENT',
        );
        expect(names(await workspace.listSkills({ agentId }))).toEqual(before);
        expect(await sandbox.exists(`${workspace.workdir}/skills/escape.txt`)).toBe(false);
        expect(await sandbox.exists(`${workspace.workdir}/escape.txt`)).toBe(false);
        const leftovers = (await sandbox.list(workspace.workdir)).filter((entry) =>
          entry.name.startsWith('.skill-staging'),
        );
        expect(leftovers).toEqual([]);
      },
    );

    conformanceCase(
      context,
      'skills.remove-and-purge',
      'removes by front-matter name, says NOT_FOUND otherwise; purgeAgent re-equips from the seed',
      async () => {
        const agentId = 'remover';
        await workspace.addSkill(hostSkill('to-remove', 'removable'), { agentId });
        await workspace.removeSkill('removable', { agentId });
        const error = await expectWsError(() => workspace.removeSkill('removable', { agentId }), 'NOT_FOUND');
        expect(error.message).toMatch(/Available/);
        await workspace.removeSkill('beta', { agentId });
        expect(names(await workspace.listSkills({ agentId }))).toEqual(['alpha']);
        await workspace.purgeAgent({ agentId });
        expect(await sandbox.exists(`${workspace.workdir}/skills/${agentId}`)).toBe(false);
        expect(names(await workspace.listSkills({ agentId }))).toEqual(['alpha', 'beta']);
      },
    );

    conformanceCase(
      context,
      'skills.hostile-agent-ids',
      'refuses agent ids such as ../escape, .. and .seed',
      async () => {
        for (const agentId of ['../escape', '..', '.seed', 'a/b', '', 'x\0y']) {
          await expectWsError(() => workspace.listSkills({ agentId }), 'INVALID_ARGUMENT');
          await expectWsError(() => workspace.addSkill(seedB, { agentId }), 'INVALID_ARGUMENT');
          await expectWsError(() => workspace.purgeAgent({ agentId }), 'INVALID_ARGUMENT');
        }
        expect(await sandbox.exists(`${workspace.workdir}/escape`)).toBe(false);
      },
    );

    conformanceCase(
      context,
      'skills.legacy-layout',
      'moves skills of the layout before partitions (no skills/.seed) into the seed at initialize',
      async (test) => {
        const id = context.newId();
        const first = await context.create(id);
        if (!first.capabilities.persistent) {
          await first.close();
          test.skip(`the ${first.capabilities.backend} workspace declares persistent: false`);
        }
        await first.initialize();
        // A workdir of the layout before partitions: skills directly under skills/, and no .seed.
        const sandbox = first.getSandbox();
        await sandbox.remove(`${first.workdir}/skills/.seed`, { recursive: true, force: true });
        await sandbox.writeFile(
          `${first.workdir}/skills/legacy/SKILL.md`,
          skillMarkdown('old', 'from before partitions'),
        );
        await first.close();
        const second = await context.create(id);
        try {
          await second.initialize();
          const entries = (await second.getSandbox().list(`${second.workdir}/skills`))
            .map((entry) => entry.name)
            .sort();
          expect(entries).toEqual(['.seed']);
          expect(names(await second.listSkills({ agentId: 'someone' }))).toEqual(['old']);
        } finally {
          await second.close();
        }
      },
    );
  });
}
