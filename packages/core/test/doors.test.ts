import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Core's three doors: `@ws/core` (users), `@ws/core/backend` (backend authors), `@ws/core/gateway`.
const core = join(dirname(fileURLToPath(import.meta.url)), '..');
const repository = join(core, '..', '..');

/** The names a door file exports (values and types). */
function exportedNames(door: string): string[] {
  const text = readFileSync(join(core, 'src', door), 'utf8');
  const names: string[] = [];
  for (const match of text.matchAll(/export (?:type )?\{([^}]*)\}/g))
    for (const name of match[1]!.split(',')) if (name.trim()) names.push(name.trim().replace(/^type /, ''));
  return names;
}

function files(folder: string, found: string[] = []): string[] {
  for (const name of readdirSync(folder)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(folder, name);
    if (statSync(path).isDirectory()) files(path, found);
    else if (/\.(ts|mts|mjs|js)$/.test(name)) found.push(path);
  }
  return found;
}

describe("core's doors", () => {
  it('keeps the user door small: user-facing contracts only', () => {
    const names = exportedNames('index.ts');
    // 70, plus workspaceToolset (with its two types and the Skill tool's name): the user's way into a
    // framework; plus ReadFileOptions (readFile's maxBytes); plus the sandbox policy every workspace
    // class takes (SandboxPolicyOptions, WorkspaceLimits, NetworkPolicy, Privileges); plus
    // WorkspacePackages, the type of the common `packages` option; plus WorkspaceEvent and
    // WorkspaceEventListener, what the common `onEvent` option takes.
    expect(names.length).toBeLessThanOrEqual(82);
    // Engine internals stay private.
    for (const internal of [
      'McpRegistry',
      'SkillStore',
      'OffloadStore',
      'ReadCache',
      'SearchTools',
      'LAYOUT',
    ])
      expect(names).not.toContain(internal);
    expect(names).toContain('EmbeddedResourceContent');
  });

  it('documents every declaration of the user door and every member of its interfaces', () => {
    const undocumented: string[] = [];
    for (const file of readdirSync(join(core, 'src', 'contracts'))) {
      const lines = readFileSync(join(core, 'src', 'contracts', file), 'utf8').split('\n');
      let inInterface = false;
      lines.forEach((line, index) => {
        const previous = lines[index - 1]?.trim() ?? '';
        if (/^export (interface|type|class|function|const) /.test(line)) {
          inInterface = /^export (interface|class) /.test(line) && line.trimEnd().endsWith('{');
          if (!previous.endsWith('*/')) undocumented.push(`${file}:${index + 1} ${line.trim()}`);
          return;
        }
        if (line === '}') inInterface = false;
        // Members: one level in, a name then `:`, `?:` or `(`.
        if (inInterface && /^ {2}(readonly )?[A-Za-z_]\w*\??(\(|:|<)/.test(line) && !previous.endsWith('*/'))
          undocumented.push(`${file}:${index + 1} ${line.trim()}`);
      });
    }
    expect(undocumented).toEqual([]);
  });

  it('is entered through its doors only: no package imports core by path', () => {
    const offenders: string[] = [];
    for (const folder of ['packages', 'apps', 'bench']) {
      for (const file of files(join(repository, folder))) {
        if (file.startsWith(`${core}/`)) continue;
        const text = readFileSync(file, 'utf8');
        if (/from\s+['"](@ws\/core\/(src|dist)\b[^'"]*|[^'"]*\/core\/(src|dist)\/[^'"]*)['"]/.test(text))
          offenders.push(relative(repository, file));
      }
    }
    expect(offenders).toEqual([]);
  });

  it('exports each door from the package', () => {
    const manifest = JSON.parse(readFileSync(join(core, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(Object.keys(manifest.exports).sort()).toEqual(['.', './backend', './gateway', './package.json']);
    expect(exportedNames('backend.ts')).toContain('WorkspaceEngine');
    expect(exportedNames('gateway.ts')).toContain('sandboxGatewayLauncher');
  });
});
