import type { CompleteSandbox, McpClient, ToolResult } from '@ws/core';
import { expect } from 'vitest';
import { openInChild } from './child-workspace.js';
import type { CaseControls } from './harness.js';
import { stdioSpec, uploadMcpFixtures } from './mcp-fixtures.js';
import { afterAll } from './suite.js';
import type { AreaContext, WorkspaceUnderTest } from './target.js';

/**
 * An `open` for one area's cases: creates (through the target) and initializes a workspace, and
 * closes every workspace it opened after the area. Call it inside the area's `describe`.
 */
export function workspaceOpener(
  context: AreaContext,
): (workspaceId?: string, options?: Parameters<AreaContext['create']>[1]) => Promise<WorkspaceUnderTest> {
  const opened: WorkspaceUnderTest[] = [];
  afterAll(async () => {
    await Promise.allSettled(opened.map((workspace) => workspace.close()));
  }, context.caseTimeoutMs);
  return async (workspaceId, options = {}) => {
    const workspace = await context.create(workspaceId, options);
    opened.push(workspace);
    await workspace.initialize();
    return workspace;
  };
}

/** Skips a case on a backend that separates nothing from the host (local, by design). */
export function requireBoundary(workspace: WorkspaceUnderTest, test: CaseControls): void {
  if (workspace.capabilities.isolation === 'none')
    test.skip(`the ${workspace.capabilities.backend} backend has no boundary by design (isolation: none)`);
}

/**
 * The test MCP server running where this backend runs MCP servers: inside the gateway's sandbox on a
 * sandboxed backend, so its `sh` tool acts as a hostile agent there. Skips without MCP.
 */
export async function hostileServer(
  workspace: WorkspaceUnderTest,
  test: CaseControls,
  agentId = 'hostile',
): Promise<McpClient> {
  if (!workspace.capabilities.mcp)
    test.skip(`the ${workspace.capabilities.backend} workspace runs no MCP servers here (no gateway)`);
  await uploadMcpFixtures(workspace.getSandbox(), workspace.workdir);
  await workspace.addMcp(stdioSpec('hostile'), { agentId });
  const [client] = await workspace.listMcps({ agentId });
  if (!client) throw new Error('the hostile MCP server did not connect');
  return client;
}

/** Skips a case unless the workspace runs a gateway (sandboxed and MCP-capable). */
export async function gatewayServer(workspace: WorkspaceUnderTest, test: CaseControls): Promise<McpClient> {
  requireBoundary(workspace, test);
  return hostileServer(workspace, test);
}

/** Runs a script through the hostile MCP server's `sh` tool; returns its output. */
export async function shInGateway(client: McpClient, script: string): Promise<string> {
  const result = await client.callTool('sh', { script });
  return (result.metadata?.structuredContent as { stdout?: string } | undefined)?.stdout ?? textOf(result);
}

/** Runs a script as an ordinary command; returns its stdout. */
export async function shInSandbox(
  sandbox: CompleteSandbox,
  script: string,
  ...args: string[]
): Promise<string> {
  const result = await sandbox.exec(['sh', '-c', script, 'sh', ...args], { timeoutMs: 30_000 });
  return result.stdoutText;
}

function textOf(result: ToolResult): string {
  return result.content.map((item) => (item.type === 'text' ? item.text : '')).join('');
}

/** The error's `details.mayHaveRun`, if it is a WsError that has one. */
export function mayHaveRun(error: unknown): unknown {
  return (error as { details?: Record<string, unknown> })?.details?.mayHaveRun;
}

/** `size` bytes of one value: a torn or short file of them is told apart from a whole one at a glance. */
export function filled(size: number, byte: number): Uint8Array {
  return new Uint8Array(size).fill(byte);
}

/** True when `bytes` is exactly `size` bytes of `byte`. */
export function isFilled(bytes: Uint8Array, size: number, byte: number): boolean {
  if (bytes.byteLength !== size) return false;
  for (let index = 0; index < bytes.byteLength; index++) if (bytes[index] !== byte) return false;
  return true;
}

/** The shortest a write in the kill cases lasts, so that kills placed at fractions of it land while it runs. */
const KILLED_WRITE_MS = 250;
/** The size the kill cases try first; each try after it is four times larger. */
const KILLED_WRITE_FIRST_BYTES = 1024 * 1024;

/**
 * Writes `path` whole with `byte` at the smallest size, from 1 MiB and four times larger each try up
 * to `largest`, whose write lasts at least {@link KILLED_WRITE_MS}; returns that size and how long its
 * write took. The kill cases place their kills at fractions of that time, so each kill lands while a
 * write runs on a fast backend and on a slow one alike, and no more bytes move than that takes.
 */
export async function writeLongEnough(
  sandbox: CompleteSandbox,
  path: string,
  byte: number,
  largest: number,
): Promise<{ size: number; ms: number }> {
  // A first small write, so that what the first write of a workspace sets up is not timed.
  await sandbox.writeFile(path, filled(1, byte));
  let size = Math.min(KILLED_WRITE_FIRST_BYTES, largest);
  for (;;) {
    const began = performance.now();
    await sandbox.writeFile(path, filled(size, byte));
    const ms = performance.now() - began;
    if (ms >= KILLED_WRITE_MS || size >= largest) return { size, ms };
    size = Math.min(size * 4, largest);
  }
}

/**
 * Opens the target's workspace `workspaceId` in a separate Node process, which writes `size` bytes
 * of `byte` to `path` and is killed with SIGKILL `killAfterMs` after it started the write. Resolves
 * once the process is gone.
 */
export async function writeInKilledProcess(
  context: AreaContext,
  test: CaseControls,
  workspaceId: string,
  path: string,
  size: number,
  byte: number,
  killAfterMs: number,
): Promise<void> {
  const child = openInChild(
    context,
    test,
    workspaceId,
    `say('writing');
await workspace.getSandbox().writeFile(${JSON.stringify(path)}, new Uint8Array(${size}).fill(${byte}));
say('written');
await new Promise(() => {});`,
  );
  if (!(await child.printed('writing')))
    throw new Error(`the writer process ended before writing: ${child.stderr()}`);
  await new Promise((resolve) => setTimeout(resolve, killAfterMs));
  child.kill('SIGKILL');
  await child.ended;
  expect(child.stderr()).toBe('');
}
