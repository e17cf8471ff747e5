import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireEngine } from '../../packages/contract-tests/src/engines.js';
// @ts-expect-error: a plain ES module shared with the consumer smoke test.
import { allExamples, packageCheckScenario } from '../../scripts/readme-examples.mjs';

interface Example {
  id: string;
  lang: 'js' | 'ts';
  needs: string[];
  code: string;
  prelude: string;
}

const root = resolve(import.meta.dirname, '../..');
const examples = allExamples(root) as Example[];
const scenarioOf = packageCheckScenario as (example: Example) => string | undefined;
// `.ci/run` sets this when scripts/check-packages.mjs runs beside the tests: that check runs these
// examples against the packed tarballs installed with npm (and checks what they leave), so they run
// there, once.
const byPackageCheck = process.env.WS_README_EXAMPLES_BY === 'check-packages';
const scratch = join(root, 'docs/.examples');
const run = promisify(execFile);

/** `docs/.examples` resolves `@ws/*` to the packages of this repository, as an installed project would. */
function prepareScratch(): void {
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(join(scratch, 'node_modules/@ws'), { recursive: true });
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group))) {
      symlinkSync(join(root, group, name), join(scratch, 'node_modules/@ws', name));
      // The packages' own dependencies too (e2b for the emulator's example), as an install would have them.
      const modules = join(root, group, name, 'node_modules');
      if (!existsSync(modules)) continue;
      for (const dep of readdirSync(modules)) {
        if (dep.startsWith('.') || dep === '@ws') continue;
        const dirs = dep.startsWith('@')
          ? readdirSync(join(modules, dep)).map((inner) => `${dep}/${inner}`)
          : [dep];
        for (const dir of dirs) {
          const link = join(scratch, 'node_modules', dir);
          if (existsSync(link)) continue;
          mkdirSync(dirname(link), { recursive: true });
          symlinkSync(join(modules, dir), link);
        }
      }
    }
  }
  writeFileSync(join(scratch, 'package.json'), '{ "type": "module", "private": true }\n');
}

function fileName(example: Example, extension: string): string {
  return `${example.id.replace(/[^a-zA-Z0-9]+/g, '-')}.${extension}`;
}

async function dockerImageReady(): Promise<string | undefined> {
  try {
    await run('docker', ['image', 'inspect', 'ws-workspace:bookworm'], { timeout: 20_000 });
    return undefined;
  } catch (error) {
    return requireEngine(
      'docker',
      `no Docker engine with the image ws-workspace:bookworm (${(error as Error).message.split('\n')[0]})`,
    );
  }
}

describe('README examples', () => {
  beforeAll(prepareScratch);

  it('every README has its examples labelled js (runnable on Node 20) or ts (type-checked)', () => {
    expect(examples.filter((example) => example.lang === 'js').length).toBeGreaterThanOrEqual(2);
    expect(examples.filter((example) => example.lang === 'ts').length).toBeGreaterThanOrEqual(3);
    for (const example of examples.filter((candidate) => candidate.lang === 'js'))
      expect(example.code, `${example.id}: \`await using\` is a SyntaxError on Node 20`).not.toMatch(
        /\bawait using\b/,
      );
  });

  // Against the built declarations (what an installed package gives a user), so `npm test` builds first.
  describe('TypeScript examples type-check', () => {
    const diagnostics = new Map<string, string[]>();

    beforeAll(async () => {
      const files = examples
        .filter((example) => example.lang === 'ts')
        .map((example) => {
          const name = fileName(example, 'ts');
          // `export {}` makes a fragment a module, so top-level await and imports are allowed.
          writeFileSync(join(scratch, name), `${example.prelude}${example.code}export {};\n`);
          diagnostics.set(name, []);
          return name;
        });
      writeFileSync(
        join(scratch, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            lib: ['es2022', 'esnext.disposable'],
            types: ['node'],
            noEmit: true,
            skipLibCheck: true,
          },
          files,
        }),
      );
      const tsc = join(root, 'node_modules/typescript/bin/tsc');
      const output = await run(process.execPath, [tsc, '-p', scratch, '--pretty', 'false'], {
        cwd: scratch,
        maxBuffer: 16 * 1024 * 1024,
      }).then(
        (result) => result.stdout,
        (error: { stdout?: string }) => error.stdout ?? String(error),
      );
      for (const line of output.split('\n')) {
        if (!/\berror TS\d+/.test(line)) continue;
        const own = diagnostics.get(/^(\S+?\.ts)\(\d+,\d+\): error/.exec(line)?.[1] ?? '');
        if (own) own.push(line);
        // An error in a package's own sources or in the configuration fails every example.
        else for (const list of diagnostics.values()) list.push(line);
      }
    }, 120_000);

    for (const example of examples.filter((candidate) => candidate.lang === 'ts')) {
      it(example.id, () => {
        expect(diagnostics.get(fileName(example, 'ts'))).toEqual([]);
      });
    }
  });

  describe('JavaScript examples run as pasted, and exit by themselves', () => {
    let dockerMissing: string | undefined;
    beforeAll(async () => {
      dockerMissing = await dockerImageReady();
      if (dockerMissing) console.log(`README docker examples skipped: ${dockerMissing}`);
    });

    for (const example of examples.filter((candidate) => candidate.lang === 'js')) {
      it(example.id +
        (example.needs.length ? ` (needs ${example.needs.join(', ')})` : ''), async (context) => {
        const scenario = scenarioOf(example);
        if (byPackageCheck && scenario !== undefined) {
          context.skip(
            `run by scripts/check-packages.mjs in this run, installed from the tarballs (${scenario})`,
          );
          return;
        }
        if (example.needs.includes('docker') && dockerMissing) {
          context.skip(dockerMissing);
          return;
        }
        const script = join(scratch, fileName(example, 'mjs'));
        writeFileSync(script, example.code);
        const cwd = mkdtempSync(join(tmpdir(), 'ws-readme-'));
        try {
          const child = spawn(process.execPath, [script], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
          let output = '';
          child.stdout.on('data', (chunk: Buffer) => {
            output += chunk.toString();
          });
          child.stderr.on('data', (chunk: Buffer) => {
            output += chunk.toString();
          });
          // Not a speed limit: a script that never exits (a handle left open) is the failure caught here.
          const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
          const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
            child.on('close', (exitCode, exitSignal) => done([exitCode, exitSignal])),
          );
          clearTimeout(timer);
          expect({ code, signal, output }).toMatchObject({ code: 0, signal: null });
          expect(output.length).toBeGreaterThan(0);
        } finally {
          // A workspace's files are the user's: the example's own folder goes with the scratch cwd.
          rmSync(cwd, { recursive: true, force: true });
        }
      }, 120_000);
    }
  });
});
