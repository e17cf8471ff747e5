/**
 * The MCP client (the MCP SDK, zod, ajv: most of the gateway's code), loaded on the first MCP
 * request. The built gateway replaces this module with one that compiles an embedded copy then, so
 * that a gateway serving only commands and files never parses it (see tsup.config.ts).
 */
export function loadMcp(): Promise<typeof import('@ws/local/mcp')> {
  return import('@ws/local/mcp');
}
