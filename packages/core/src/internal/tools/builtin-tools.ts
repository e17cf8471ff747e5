import type { Tool } from '../../contracts/tool.js';
import { createBashTool } from './bash-tool.js';
import type { ToolEnvironment } from './common.js';
import { createEditTool } from './edit-tool.js';
import { createGlobTool } from './glob-tool.js';
import { createGrepTool } from './grep-tool.js';
import { createReadTool } from './read-tool.js';
import { createWriteTool } from './write-tool.js';

/** The six built-in tools, in AgentScope's order: Bash, Edit, Glob, Grep, Read, Write. */
export function createBuiltinTools(environment: ToolEnvironment): Tool[] {
  return [
    createBashTool(environment),
    createEditTool(environment),
    createGlobTool(environment),
    createGrepTool(environment),
    createReadTool(environment),
    createWriteTool(environment),
  ] as unknown as Tool[]; // each tool validates its input at run time
}
