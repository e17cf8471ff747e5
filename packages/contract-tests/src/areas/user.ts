import { expect } from 'vitest';
import { okText, toolNamed } from '../fixtures.js';
import { conformanceCase, expectWsError } from '../harness.js';
import { describe } from '../suite.js';
import type { AreaContext } from '../target.js';

/**
 * `user`: a backend that can run commands as another user runs every command, file operation and
 * tool as the one asked, in a workdir that user can write; one that cannot refuses the option with
 * `INVALID_ARGUMENT` before anything is created. Without `target.user`, the area is skipped.
 */
export function userArea(context: AreaContext): void {
  const asked = context.target.user;
  if (!asked) return;

  describe('user', { decidedBy: 'backend' }, () => {
    conformanceCase(
      context,
      'user.refused',
      'refuses the user option with INVALID_ARGUMENT saying why, before anything is created',
      async (test) => {
        if (asked !== 'refused') return test.skip('the backend runs commands as another user');
        const workspaceId = context.newId();
        const error = await expectWsError(async () => {
          const workspace = await context.create(workspaceId, { user: 'nobody' });
          await workspace.initialize();
        }, 'INVALID_ARGUMENT');
        expect(error.message).toMatch(/user/);
        if (context.target.leftovers) expect(await context.target.leftovers(workspaceId)).toEqual([]);
      },
    );

    conformanceCase(
      context,
      'user.runs-as',
      'commands, the Bash tool, file writes and the file tools act as the user; in a workdir they can write',
      async (test) => {
        if (asked === 'refused') return test.skip('the backend refuses the user option');
        const workspace = await context.create(undefined, { user: asked.option });
        await workspace.initialize();
        const sandbox = workspace.getSandbox();
        const ids = await sandbox.exec(['/bin/sh', '-c', 'id -u; id -un 2>/dev/null || echo "?"']);
        expect(ids.exitCode, ids.stderrText).toBe(0);
        const [uid, name] = ids.stdoutText.trim().split('\n');
        expect(uid).toBe(String(asked.uid));
        if (asked.name !== undefined) expect(name).toBe(asked.name);

        const bash = await toolNamed(workspace, 'Bash');
        expect(okText(await bash.call({ command: 'id -u; echo made > by-bash.txt' })).trim()).toBe(
          String(asked.uid),
        );
        await sandbox.writeFile(`${workspace.workdir}/by-api.txt`, 'written\n');
        const write = await toolNamed(workspace, 'Write');
        okText(await write.call({ file_path: `${workspace.workdir}/by-tool.txt`, content: 'alpha\n' }));
        const read = await toolNamed(workspace, 'Read');
        expect(okText(await read.call({ file_path: `${workspace.workdir}/by-bash.txt` }))).toContain('made');
        const edit = await toolNamed(workspace, 'Edit');
        okText(await read.call({ file_path: `${workspace.workdir}/by-tool.txt` }));
        okText(
          await edit.call({
            file_path: `${workspace.workdir}/by-tool.txt`,
            old_string: 'alpha',
            new_string: 'beta',
          }),
        );
        expect(new TextDecoder().decode(await sandbox.readFile(`${workspace.workdir}/by-tool.txt`))).toBe(
          'beta\n',
        );
        const owners = await sandbox.exec(
          ['stat', '-c', '%u %n', 'by-bash.txt', 'by-api.txt', 'by-tool.txt'],
          { cwd: workspace.workdir },
        );
        expect(owners.stdoutText, owners.stderrText).toBe(
          ['by-bash.txt', 'by-api.txt', 'by-tool.txt'].map((file) => `${asked.uid} ${file}\n`).join(''),
        );
        await workspace.close();
      },
      context.caseTimeoutMs * 2,
    );
  });
}
