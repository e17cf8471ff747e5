// Entry point with the host sandbox only (no MCP SDK), for code that must start fast.

export type { LocalSandboxOptions } from './local-sandbox.js';
export { LocalSandbox } from './local-sandbox.js';
