import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import { decodeUtf8 } from '../../backend/exec-result.js';
import { validateId } from '../../backend/ids.js';
import { isWsError, throwIfAborted, WsError } from '../../contracts/errors.js';
import type { CompleteSandbox, FileOptions } from '../../contracts/sandbox.js';
import type { Skill, SkillArchive } from '../../contracts/skill.js';
import { LAYOUT, type LayoutPaths } from '../layout.js';
import { type ArchiveMember, checkMembers, DEFAULT_MAX_EXTRACTED_BYTES, readArchive } from './archive.js';
import { parseSkillDocument } from './front-matter.js';

/** Options of skill operations that name an agent. A missing `agentId` means the `default` partition. */
export interface SkillScope extends FileOptions {
  agentId?: string;
}

const SKILL_FILE = 'SKILL.md';

// $1 seed, $2 partition, $3 staging. Copies the seed to a staging directory and renames it into
// place; if another writer got there first, its copy wins and the staging copy is dropped.
const EQUIP_SCRIPT = `
seed=$1 part=$2 staging=$3
[ -d "$part" ] && exit 0
mkdir -p "$(dirname "$part")" || exit 1
rm -rf "$staging" && mkdir -p "$staging" || exit 1
if [ -d "$seed" ]; then cp -pR "$seed/." "$staging/" || { rm -rf "$staging"; exit 1; }; fi
mv -T "$staging" "$part" 2>/dev/null && exit 0
rm -rf "$staging"
[ -d "$part" ]
`;

/** Expands a leading `~` and resolves against the cwd: where a host skill path points. */
export function resolveHostPath(path: string): string {
  const expanded = path === '~' ? homedir() : path.startsWith('~/') ? join(homedir(), path.slice(2)) : path;
  return resolve(expanded);
}

/** A folder name from a skill name: letters, digits, `_` and `-` kept, the rest `_`. */
function folderNameFor(name: string): string {
  const cleaned = name.replace(/[^\p{L}\p{N}_-]/gu, '_').replace(/^[._]+/, '');
  return cleaned.slice(0, 100) || 'skill';
}

/**
 * Skills, implemented once over a sandbox: a `.seed` template filled from `skillPaths`, one partition
 * per agent copied from the seed on the agent's first skill call (so a skill the agent deletes never
 * comes back), and installs from host folders or archives that leave nothing behind on failure.
 */
export class SkillStore {
  private readonly equipped = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly sandbox: () => CompleteSandbox,
    private readonly paths: () => LayoutPaths,
    private readonly skillPaths: readonly string[],
  ) {}

  /** Forgets which partitions are equipped (after close or reset, the files may be gone). */
  forgetEquipped(): void {
    this.equipped.clear();
  }

  /** The partition directory of an agent; `default` when no agent is named. */
  partition(agentId: string | undefined): string {
    const name = agentId === undefined ? LAYOUT.defaultSkillPartition : validateId(agentId, 'agentId');
    return posix.join(this.paths().skillsDir, name);
  }

  private serialize<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.catch(() => {}).then(work);
    this.queue = next;
    return next;
  }

  /** Copies the seed into the agent's partition unless the partition exists; returns its path. */
  async equip(agentId: string | undefined, options: FileOptions = {}): Promise<string> {
    const partition = this.partition(agentId);
    if (this.equipped.has(partition)) return partition;
    const staging = `${partition}.equipping-${process.pid}-${Date.now().toString(36)}`;
    const result = await this.sandbox().exec(
      ['sh', '-c', EQUIP_SCRIPT, 'sh', this.paths().skillSeedDir, partition, staging],
      {
        cwd: '/',
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    if (result.exitCode !== 0) {
      throw new WsError(
        'BACKEND_ERROR',
        `Equipping the skill partition ${partition} failed: ${result.stderrText.trim() || `exit ${result.exitCode}`}`,
      );
    }
    this.equipped.add(partition);
    return partition;
  }

  /** The skills of one partition: folders holding a valid `SKILL.md`, one level deep. */
  async list(scope: SkillScope = {}): Promise<Skill[]> {
    throwIfAborted(scope.signal);
    const partition = await this.equip(scope.agentId, scope);
    return this.readPartition(partition, scope);
  }

  private async readPartition(partition: string, options: FileOptions): Promise<Skill[]> {
    const sandbox = this.sandbox();
    const entries = (await sandbox.list(partition, options)).filter((entry) => entry.type === 'directory');
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const skills = await Promise.all(
      entries.map(async (entry): Promise<Skill | undefined> => {
        const dir = posix.join(partition, entry.name);
        const file = posix.join(dir, SKILL_FILE);
        try {
          const [bytes, info] = await Promise.all([
            sandbox.readFile(file, options),
            sandbox.stat(file, options),
          ]);
          const document = await parseSkillDocument(decodeUtf8(bytes));
          if ('invalid' in document) return undefined;
          return {
            name: document.name,
            description: document.description,
            dir,
            markdown: document.markdown,
            updatedAt: info.mtimeMs,
          };
        } catch (error) {
          if (
            isWsError(error, 'NOT_FOUND') ||
            isWsError(error, 'IS_A_DIRECTORY') ||
            isWsError(error, 'NOT_A_DIRECTORY')
          )
            return undefined;
          throw error;
        }
      }),
    );
    return skills.filter((skill): skill is Skill => skill !== undefined);
  }

  /**
   * Installs a skill from a host folder (holding `SKILL.md`) or from an archive (zip, tar, tar.gz;
   * flat or with one top folder) into the agent's partition, under a free folder name (`name`,
   * `name-1`, …). The files are written to a staging folder first and renamed into place, so a failed
   * install leaves nothing behind.
   *
   * @throws WsError `INVALID_ARGUMENT` (no valid SKILL.md, unsafe archive member), `LIMIT_EXCEEDED`.
   */
  async add(
    source: string | SkillArchive,
    options: SkillScope & { maxExtractedBytes?: number } = {},
  ): Promise<Skill> {
    throwIfAborted(options.signal);
    const limit = options.maxExtractedBytes ?? DEFAULT_MAX_EXTRACTED_BYTES;
    const { members, folder } =
      typeof source === 'string'
        ? await readHostSkill(resolveHostPath(source), limit)
        : await archiveSkill(source, limit);
    const document = await skillDocumentOf(members, typeof source === 'string' ? source : 'the archive');
    const base = folder ?? folderNameFor(document.name);
    validateId(base, 'skill folder name');
    const partition = await this.equip(options.agentId, options);
    return this.serialize(async () => {
      const sandbox = this.sandbox();
      const taken = new Set((await sandbox.list(partition, options)).map((entry) => entry.name));
      let name = base;
      for (let suffix = 1; taken.has(name); suffix++) name = `${base}-${suffix}`;
      const staging = posix.join(
        this.paths().workdir,
        `.skill-staging-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
      );
      const target = posix.join(partition, name);
      try {
        await writeMembers(sandbox, staging, members, options);
        await sandbox.rename(staging, target, options);
      } catch (error) {
        await sandbox.remove(staging, { recursive: true, force: true }).catch(() => {});
        throw error;
      }
      const info = await sandbox.stat(posix.join(target, SKILL_FILE), options);
      return {
        name: document.name,
        description: document.description,
        dir: target,
        markdown: document.markdown,
        updatedAt: info.mtimeMs,
      };
    });
  }

  /**
   * Removes the skill whose front-matter name is `name` from the agent's partition.
   * @throws WsError `NOT_FOUND` when no skill has that name.
   */
  async remove(name: string, scope: SkillScope = {}): Promise<void> {
    throwIfAborted(scope.signal);
    await this.serialize(async () => {
      const skills = await this.list(scope);
      const skill = skills.find((candidate) => candidate.name === name);
      if (!skill) {
        throw new WsError(
          'NOT_FOUND',
          `Skill ${JSON.stringify(name)} not found. Available: ${JSON.stringify(skills.map((candidate) => candidate.name))}`,
          {
            details: { name, available: skills.map((candidate) => candidate.name) },
          },
        );
      }
      await this.sandbox().remove(skill.dir, {
        recursive: true,
        ...(scope.signal ? { signal: scope.signal } : {}),
      });
    });
  }

  /** Deletes an agent's partition; its next skill call equips it from the seed again. */
  async purgeAgent(agentId: string, options: FileOptions = {}): Promise<void> {
    const partition = this.partition(agentId);
    this.equipped.delete(partition);
    await this.sandbox().remove(partition, {
      recursive: true,
      force: true,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Moves skills of the layout before partitions (`skills/<dir>/SKILL.md`) into the seed, and fills an
   * empty seed from `skillPaths`. Idempotent; a skill path without a valid SKILL.md is skipped.
   * `flatSkills: false` (skills/.seed existed before this initialization, so any flat skills were
   * moved already) skips looking for them. Returns what was skipped and why.
   */
  async prepare(options: FileOptions & { flatSkills?: boolean } = {}): Promise<string[]> {
    const skipped: string[] = [];
    const sandbox = this.sandbox();
    const { skillsDir, skillSeedDir } = this.paths();
    // The older flat layout (skills/<dir>/SKILL.md) exists only where skills/.seed did not.
    const flat = options.flatSkills === false ? [] : await sandbox.list(skillsDir, options);
    for (const entry of flat) {
      if (entry.type !== 'directory' || entry.name.startsWith('.')) continue;
      const legacy = posix.join(skillsDir, entry.name);
      if (await sandbox.exists(posix.join(legacy, SKILL_FILE), options)) {
        await sandbox.rename(legacy, await freeName(sandbox, skillSeedDir, entry.name, options), options);
      }
    }
    if (this.skillPaths.length === 0 || (await sandbox.list(skillSeedDir, options)).length > 0)
      return skipped;
    for (const path of this.skillPaths) {
      const resolved = resolveHostPath(path);
      try {
        const { members, folder } = await readHostSkill(resolved, DEFAULT_MAX_EXTRACTED_BYTES);
        await skillDocumentOf(members, resolved);
        await writeMembers(
          sandbox,
          await freeName(sandbox, skillSeedDir, folder ?? 'skill', options),
          members,
          options,
        );
      } catch (error) {
        if (!isWsError(error) || error.code === 'ABORTED' || error.code === 'DISPOSED') throw error;
        skipped.push(`${resolved}: ${error.message}`);
      }
    }
    return skipped;
  }
}

async function freeName(
  sandbox: CompleteSandbox,
  parent: string,
  base: string,
  options: FileOptions,
): Promise<string> {
  const taken = new Set((await sandbox.list(parent, options)).map((entry) => entry.name));
  let name = base;
  for (let suffix = 1; taken.has(name); suffix++) name = `${base}-${suffix}`;
  return posix.join(parent, name);
}

async function skillDocumentOf(members: readonly ArchiveMember[], where: string) {
  const file = members.find((member) => member.path === SKILL_FILE && member.type === 'file');
  if (!file?.data) throw new WsError('INVALID_ARGUMENT', `Invalid skill at ${where}: SKILL.md not found`);
  const document = await parseSkillDocument(decodeUtf8(file.data));
  if ('invalid' in document)
    throw new WsError('INVALID_ARGUMENT', `Invalid skill at ${where}: ${document.invalid}`);
  return document;
}

/** The archive's skill: its members re-rooted at the folder holding SKILL.md, and that folder's name. */
async function archiveSkill(
  archive: SkillArchive,
  limit: number,
): Promise<{ members: ArchiveMember[]; folder: string | undefined }> {
  const members = (await readArchive(archive, limit)).filter(
    (member) => !member.path.startsWith('__MACOSX/') && member.path !== '__MACOSX',
  );
  let folder: string | undefined;
  let root = '';
  if (!members.some((member) => member.path === SKILL_FILE)) {
    const candidates = [
      ...new Set(
        members
          .filter((member) => /^[^/]+\/SKILL\.md$/.test(member.path))
          .map((member) => member.path.split('/')[0]!),
      ),
    ];
    if (candidates.length === 0)
      throw new WsError('INVALID_ARGUMENT', 'The skill archive contains no SKILL.md');
    if (candidates.length > 1)
      throw new WsError(
        'INVALID_ARGUMENT',
        `The skill archive holds several skills (${candidates.join(', ')}); install them one by one`,
      );
    folder = candidates[0]!;
    root = `${folder}/`;
  }
  const rerooted = members
    .filter((member) => member.path.startsWith(root) && member.path !== folder)
    .map((member) => ({ ...member, path: member.path.slice(root.length) }));
  // Checked again from the skill's own folder: a link may not lead into the archive's other folders.
  if (root !== '') checkMembers(rerooted);
  return { members: rerooted, folder: archive.dirName ?? folder };
}

/** Reads a skill folder on the host, checked like an archive (links must stay inside, size limit). */
async function readHostSkill(
  root: string,
  limit: number,
): Promise<{ members: ArchiveMember[]; folder: string }> {
  const members: ArchiveMember[] = [];
  let total = 0;
  const walk = async (relative: string): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(join(root, relative));
    } catch (error) {
      throw new WsError('INVALID_ARGUMENT', `Invalid skill at ${root}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    for (const name of names.sort()) {
      const path = relative ? `${relative}/${name}` : name;
      const info = await lstat(join(root, path));
      if (info.isSymbolicLink()) {
        members.push({ path, type: 'symlink', target: await readlink(join(root, path)) });
      } else if (info.isDirectory()) {
        members.push({ path, type: 'directory', mode: info.mode & 0o7777 });
        await walk(path);
      } else if (info.isFile()) {
        total += info.size;
        if (total > limit)
          throw new WsError('LIMIT_EXCEEDED', `The skill at ${root} is larger than ${limit} bytes`);
        members.push({
          path,
          type: 'file',
          data: await readFile(join(root, path)),
          mode: info.mode & 0o7777,
        });
      }
    }
  };
  await walk('');
  checkMembers(members);
  return { members, folder: posix.basename(root) };
}

/** Writes checked members under `root` in the sandbox: folders, files (with their modes), then links. */
async function writeMembers(
  sandbox: CompleteSandbox,
  root: string,
  members: readonly ArchiveMember[],
  options: FileOptions,
): Promise<void> {
  const signal = options.signal ? { signal: options.signal } : {};
  await sandbox.mkdir(root, { recursive: true, ...signal });
  for (const member of members) {
    const path = posix.join(root, member.path);
    if (member.type === 'directory') await sandbox.mkdir(path, { recursive: true, ...signal });
    else if (member.type === 'file')
      await sandbox.writeFile(path, member.data ?? new Uint8Array(0), {
        mode: member.mode ?? 0o644,
        ...signal,
      });
  }
  const links = members.filter((member) => member.type === 'symlink');
  if (links.length === 0) return;
  const argv = links.flatMap((member) => [member.target ?? '', posix.join(root, member.path)]);
  const result = await sandbox.exec(
    ['sh', '-c', 'while [ $# -gt 1 ]; do ln -s -- "$1" "$2" || exit 1; shift 2; done', 'sh', ...argv],
    { cwd: '/', ...signal },
  );
  if (result.exitCode !== 0)
    throw new WsError('BACKEND_ERROR', `Creating links in ${root} failed: ${result.stderrText.trim()}`);
}
