import { joinSandboxPath } from '../backend/paths.js';

/** Names of the entries @ws keeps in a workdir; identical on every backend. */
export const LAYOUT = {
  /** MCP declarations per agent and session (JSON, versioned, written atomically). */
  mcpFile: '.mcp',
  /** Offloaded media payloads, deduplicated by content hash. */
  dataDir: 'data',
  /** Skills: `.seed` template plus one partition per agent. */
  skillsDir: 'skills',
  /** The skill template seeded from `skillPaths`; never read directly. */
  skillSeedDir: '.seed',
  /** The partition of callers that name no agent. */
  defaultSkillPartition: 'default',
  /** Offloaded context and tool results, one directory per session. */
  sessionsDir: 'sessions',
} as const;

/** Absolute paths of the layout entries of one workdir. */
export interface LayoutPaths {
  /** The workdir itself. */
  readonly workdir: string;
  /** The workspace's MCP server list (`.mcp`). */
  readonly mcpFile: string;
  /** Media and files moved out of offloaded context (`data/`). */
  readonly dataDir: string;
  /** The skill partitions (`skills/`). */
  readonly skillsDir: string;
  /** The skills every partition is equipped from (`skills/.seed`). */
  readonly skillSeedDir: string;
  /** Offloaded context and tool results, one folder per session (`sessions/`). */
  readonly sessionsDir: string;
}

/** The layout paths under `workdir`. */
export function layoutPaths(workdir: string): LayoutPaths {
  const skillsDir = joinSandboxPath(workdir, LAYOUT.skillsDir);
  return {
    workdir,
    mcpFile: joinSandboxPath(workdir, LAYOUT.mcpFile),
    dataDir: joinSandboxPath(workdir, LAYOUT.dataDir),
    skillsDir,
    skillSeedDir: joinSandboxPath(skillsDir, LAYOUT.skillSeedDir),
    sessionsDir: joinSandboxPath(workdir, LAYOUT.sessionsDir),
  };
}
