/** What a `SKILL.md` declares. */
export interface SkillDocument {
  readonly name: string;
  readonly description: string;
  /** The body after the front matter. */
  readonly markdown: string;
}

/**
 * Parses a `SKILL.md`: YAML front matter between `---` lines (parsed with a real YAML parser), then
 * the Markdown body. Resolves to the reason when the file has no front matter or lacks a
 * non-empty `name` or `description`.
 */
export async function parseSkillDocument(text: string): Promise<SkillDocument | { invalid: string }> {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const match = /^---[ \t]*\n([\s\S]*?)\n?---[ \t]*(?:\n|$)/.exec(normalized);
  if (!match) return { invalid: 'SKILL.md has no YAML front matter (it must start with a --- line)' };
  // The YAML parser is loaded with the first skill read, not with the package.
  const { parse } = await import('yaml');
  let data: unknown;
  try {
    data = parse(match[1] ?? '');
  } catch (error) {
    return {
      invalid: `SKILL.md front matter is not valid YAML: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { invalid: 'SKILL.md front matter is not a mapping' };
  const record = data as Record<string, unknown>;
  const name = typeof record.name === 'string' ? record.name.trim() : '';
  const description = typeof record.description === 'string' ? record.description.trim() : '';
  if (!name || !description)
    return { invalid: "SKILL.md front matter needs non-empty 'name' and 'description' fields" };
  return { name, description, markdown: normalized.slice(match[0].length) };
}
