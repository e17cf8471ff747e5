/**
 * The default `<workspace>` prompt fragment. `{backend}` and `{workdir}` are replaced by the
 * backend's description and the workdir.
 */
export const DEFAULT_WORKSPACE_INSTRUCTIONS = `<workspace>
You work in a {backend} workspace whose root directory is {workdir}. Files you create there persist for as long as the workspace does.

Layout of {workdir}:
- data/ and sessions/ are managed by the system: offloaded media, earlier conversation context and long tool results are stored there. Read them when a message points you to them; do not edit them.
- skills/ holds skills, one folder per skill with a SKILL.md, grouped by the agent that owns them.
- Everything else is yours.

Conventions:
- Give each project its own folder named with its creation date and a short slug, such as 20250315_web-scraper, with a README.md saying what it is.
- Put throwaway files in scratch/ and delete them when done.
- Use git inside each project folder, with a .gitignore; when several sessions work on one repository, give each its own git worktree.
- Never write secrets (keys, tokens, passwords) into files.
- Prefer absolute paths under {workdir}; each command starts in {workdir}, and a cd does not carry over to the next command.
</workspace>`;

/** Fills the `{backend}` and `{workdir}` placeholders of an instructions template. */
export function formatInstructions(template: string, values: { backend: string; workdir: string }): string {
  return template.replaceAll('{backend}', values.backend).replaceAll('{workdir}', values.workdir);
}
