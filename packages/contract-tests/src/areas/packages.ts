import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { WorkspacePackages } from '@ws/core';
import { expect } from 'vitest';
import { conformanceCase, expectWsError } from '../harness.js';
import { describe } from '../suite.js';
import type { AreaContext, CreateOptions, WorkspaceUnderTest } from '../target.js';

/** What a case adds to the options of the workspaces it creates. */
type Extra = Omit<CreateOptions, 'workspaceId' | 'packages' | 'secondOwner'>;

/** Runs a shell script in the workspace's workdir; fails the case unless it exits 0. Returns stdout. */
async function sh(workspace: WorkspaceUnderTest, script: string): Promise<string> {
  const result = await workspace
    .getSandbox()
    .exec(['/bin/sh', '-c', script], { cwd: workspace.workdir, timeoutMs: 120_000 });
  expect(result.exitCode, `${script}\n${result.stdoutText}${result.stderrText}`).toBe(0);
  return result.stdoutText.trim();
}

/** An npm package tarball (a module and a command) made in the sandbox: no registry needed. */
async function npmTarball(workspace: WorkspaceUnderTest, name: string): Promise<string> {
  const sandbox = workspace.getSandbox();
  const folder = posix.join(workspace.workdir, `src-${name}`);
  await sandbox.mkdir(posix.join(folder, 'package', 'bin'), { recursive: true });
  const files: Record<string, string> = {
    'package.json': JSON.stringify({
      name,
      version: '1.0.0',
      main: 'index.js',
      bin: { [name]: 'bin/cli.js' },
    }),
    'index.js': `module.exports = { hello: 'module ${name}' };\n`,
    'bin/cli.js': `#!/usr/bin/env node\nconsole.log('command ${name}');\n`,
  };
  for (const [path, text] of Object.entries(files))
    await sandbox.writeFile(posix.join(folder, 'package', path), new TextEncoder().encode(text), {
      mode: 0o755,
    });
  const tarball = posix.join(workspace.workdir, `${name}-1.0.0.tgz`);
  await sh(workspace, `tar -czf '${tarball}' -C '${folder}' package && rm -rf '${folder}'`);
  return tarball;
}

/** A Debian package of one file (`/usr/share/<name>/marker`) made in the sandbox with dpkg-deb. */
async function debFile(workspace: WorkspaceUnderTest, name: string): Promise<string> {
  const deb = posix.join(workspace.workdir, `${name}.deb`);
  await sh(
    workspace,
    `set -e; d=$(mktemp -d); mkdir -p "$d/DEBIAN" "$d/usr/share/${name}"
printf 'Package: ${name}\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: ws <ws@example.invalid>\\nDescription: probe\\n' > "$d/DEBIAN/control"
echo 'deb ${name}' > "$d/usr/share/${name}/marker"
dpkg-deb --build "$d" '${deb}' >/dev/null; rm -rf "$d"`,
  );
  return deb;
}

/** A pure-Python wheel of one module made in the sandbox with python3's zipfile. */
async function wheelFile(workspace: WorkspaceUnderTest, name: string): Promise<string> {
  const module = name.replaceAll('-', '_');
  const wheel = posix.join(workspace.workdir, `${module}-1.0-py3-none-any.whl`);
  const script = `import sys, zipfile
m, out = sys.argv[1], sys.argv[2]
info = m + '-1.0.dist-info'
files = {m + '.py': "hello = 'module " + m + "'\\n",
  info + '/METADATA': 'Metadata-Version: 2.1\\nName: ' + m + '\\nVersion: 1.0\\n',
  info + '/WHEEL': 'Wheel-Version: 1.0\\nGenerator: ws\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}
with zipfile.ZipFile(out, 'w') as z:
    for path, text in files.items(): z.writestr(path, text)
    z.writestr(info + '/RECORD', ''.join(p + ',,\\n' for p in files) + info + '/RECORD,,\\n')`;
  const result = await workspace
    .getSandbox()
    .exec(['python3', '-c', script, module, wheel], { cwd: workspace.workdir, timeoutMs: 60_000 });
  expect(result.exitCode, result.stderrText).toBe(0);
  return wheel;
}

/**
 * The `packages` option: a package of each installer the target declares, made in the sandbox (no
 * network), is installed at open and works from a command; a second workspace on the same sandbox does
 * not install it again (its source is gone by then: an install would fail); a failing install fails the
 * open with `PACKAGE_INSTALL_FAILED` naming the package and leaves nothing; an installer flag as a spec
 * is refused before anything is made.
 */
export function packagesArea(context: AreaContext): void {
  const support = context.target.packages;
  if (!support) return;
  const base: Extra = support.options ?? {};
  const forApt: Extra = { ...base, ...support.aptOptions };

  /** A workspace on `workspaceId` without packages, ready, the installers made runnable. */
  const holder = async (workspaceId: string, options: Extra) => {
    const workspace = await context.create(workspaceId, options);
    await workspace.initialize();
    await support.prepare?.(workspace);
    return workspace;
  };

  /**
   * Opens a workspace on `workspaceId` with `packages` and checks `works`; closes it, removes `source`
   * through `holder` (which keeps the sandbox), and opens again with the same packages: the record
   * says they are there, so no installer runs (one would fail on the missing source) and `works` holds.
   */
  const installedOnce = async (
    workspaceId: string,
    holding: WorkspaceUnderTest,
    options: Extra,
    packages: WorkspacePackages,
    source: string,
    works: (workspace: WorkspaceUnderTest) => Promise<void>,
  ) => {
    const first = await context.create(workspaceId, { ...options, packages });
    await first.initialize();
    await works(first);
    await first.close();
    await sh(holding, `rm -f '${source}' && test ! -e '${source}'`);
    const again = await context.create(workspaceId, { ...options, packages });
    await again.initialize();
    await works(again);
    await again.close();
  };

  describe('packages', { decidedBy: 'backend' }, () => {
    conformanceCase(
      context,
      'packages.npm',
      'installs an npm tarball at open: its command runs from a shell, require() finds it; a re-attach does not install it again',
      async (test) => {
        if (!support.npm) return test.skip('the target declares no npm');
        const workspaceId = context.newId();
        const name = `ws-probe-${randomBytes(4).toString('hex')}`;
        const holding = await holder(workspaceId, base);
        try {
          const tarball = await npmTarball(holding, name);
          await installedOnce(workspaceId, holding, base, { npm: [tarball] }, tarball, async (workspace) => {
            expect(await sh(workspace, name)).toBe(`command ${name}`);
            expect(
              await sh(
                workspace,
                `NODE_PATH="$(npm root -g)" node -e "console.log(require('${name}').hello)"`,
              ),
            ).toBe(`module ${name}`);
          });
        } finally {
          await holding.close();
        }
      },
      context.caseTimeoutMs * 3,
    );

    conformanceCase(
      context,
      'packages.apt',
      'installs a local .deb with apt at open; a re-attach does not install it again',
      async (test) => {
        if (!support.apt) return test.skip('the target declares no apt');
        const workspaceId = context.newId();
        const name = `ws-probe-${randomBytes(4).toString('hex')}`;
        const options = forApt;
        const holding = await holder(workspaceId, options);
        try {
          const deb = await debFile(holding, name);
          await installedOnce(workspaceId, holding, options, { apt: [deb] }, deb, async (workspace) => {
            expect(await sh(workspace, `cat /usr/share/${name}/marker`)).toBe(`deb ${name}`);
            expect(await sh(workspace, `dpkg-query -W -f '\${Status}' ${name}`)).toBe('install ok installed');
          });
        } finally {
          await holding.close();
        }
      },
      context.caseTimeoutMs * 3,
    );

    conformanceCase(
      context,
      'packages.pip',
      'installs a local wheel with pip at open; a re-attach does not install it again',
      async (test) => {
        if (!support.pip) return test.skip('the target declares no pip');
        const workspaceId = context.newId();
        const name = `ws_probe_${randomBytes(4).toString('hex')}`;
        const holding = await holder(workspaceId, base);
        try {
          const wheel = await wheelFile(holding, name);
          await installedOnce(workspaceId, holding, base, { pip: [wheel] }, wheel, async (workspace) => {
            expect(await sh(workspace, `python3 -c "import ${name}; print(${name}.hello)"`)).toBe(
              `module ${name}`,
            );
          });
        } finally {
          await holding.close();
        }
      },
      context.caseTimeoutMs * 3,
    );

    conformanceCase(
      context,
      'packages.failure',
      'fails the open with PACKAGE_INSTALL_FAILED naming the package and the output; nothing is left',
      async () => {
        const workspaceId = context.newId();
        const installer = support.npm ? 'npm' : support.apt ? 'apt' : 'pip';
        const options = installer === 'apt' ? forApt : base;
        const missing = `/var/tmp/ws-missing-${randomBytes(4).toString('hex')}.${installer === 'npm' ? 'tgz' : installer === 'apt' ? 'deb' : 'whl'}`;
        const holding = await holder(workspaceId, options);
        try {
          const error = await expectWsError(async () => {
            const workspace = await context.create(workspaceId, {
              ...options,
              packages: { [installer]: [missing] },
            });
            await workspace.initialize();
          }, 'PACKAGE_INSTALL_FAILED');
          expect(error.message).toContain(missing);
          expect(error.message).not.toMatch(/is not installed in the sandbox/);
          const details = (error as Error & { details?: Record<string, unknown> }).details;
          expect(details).toMatchObject({ installer, packages: [missing] });
          expect(details?.exitCode).not.toBe(0);
          expect(String(details?.outputTail).length).toBeGreaterThan(0);
          // The holder goes on working.
          expect(await sh(holding, 'echo next')).toBe('next');
        } finally {
          await holding.close();
        }
        if (context.target.leftovers) expect(await context.target.leftovers(workspaceId)).toEqual([]);
      },
      context.caseTimeoutMs * 2,
    );

    conformanceCase(
      context,
      'packages.failure-alone',
      'a failing install on a sandbox of its own leaves nothing running',
      async () => {
        const workspaceId = context.newId();
        const missing = `/var/tmp/ws-missing-${randomBytes(4).toString('hex')}.tgz`;
        const error = await expectWsError(async () => {
          const workspace = await context.create(workspaceId, { ...base, packages: { npm: [missing] } });
          await workspace.initialize();
        }, 'PACKAGE_INSTALL_FAILED');
        expect(error.message).toContain(missing);
        if (context.target.leftovers) expect(await context.target.leftovers(workspaceId)).toEqual([]);
      },
    );

    conformanceCase(
      context,
      'packages.invalid-spec',
      'refuses an installer flag as a spec with INVALID_ARGUMENT naming it, before anything is made',
      async () => {
        const workspaceId = context.newId();
        const error = await expectWsError(async () => {
          const workspace = await context.create(workspaceId, { ...base, packages: { npm: ['--prefix=/'] } });
          await workspace.initialize();
        }, 'INVALID_ARGUMENT');
        expect(error.message).toContain('"--prefix=/"');
        if (context.target.leftovers) expect(await context.target.leftovers(workspaceId)).toEqual([]);
      },
    );
  });
}
