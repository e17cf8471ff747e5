/** A skill: a folder holding a `SKILL.md` whose YAML front matter names and describes it. */
export interface Skill {
  /** The front-matter `name`. */
  readonly name: string;
  /** The front-matter `description`. */
  readonly description: string;
  /** The skill's folder, as a path inside the sandbox. */
  readonly dir: string;
  /** The body of `SKILL.md` without its front matter. */
  readonly markdown: string;
  /** Last modification of `SKILL.md`, in milliseconds since the epoch (0 when unknown). */
  readonly updatedAt: number;
}

/** An archive to install as a skill. */
export interface SkillArchive {
  /** The archive's format. */
  readonly format: 'zip' | 'tar' | 'tar.gz';
  /** The archive's bytes, whole or streamed (read into memory, up to `maxExtractedBytes`). */
  readonly data: Uint8Array | AsyncIterable<Uint8Array>;
  /** The folder name to install under; default: the archive's single top folder, else `skill`. */
  readonly dirName?: string;
}
