import { spawn } from 'node:child_process';
import type { CompleteSandbox, McpClient, ToolResult } from '@ws/core';
import { afterAll, expect } from 'vitest';
import type { CaseControls } from './harness.js';
import { stdioSpec, uploadMcpFixtures } from './mcp-fixtures.js';
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
  const target = context.target.process;
  if (!target) test.skip('the target gives no way to open its workspace in another process (target.process)');
  const options = target.options({ workspaceId });
  const script = `
const { ${target.exportName}: Workspace } = await import(${JSON.stringify(target.module)});
const workspace = new Workspace(${JSON.stringify(options)});
await workspace.initialize();
const bytes = new Uint8Array(${size}).fill(${byte});
process.stdout.write('writing\\n');
await workspace.getSandbox().writeFile(${JSON.stringify(path)}, bytes);
process.stdout.write('written\\n');
await new Promise(() => {});
`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const writing = new Promise<boolean>((resolve) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('writing\n')) resolve(true);
    });
    void closed.then(() => resolve(false));
  });
  const started = await writing;
  if (!started) {
    await closed;
    throw new Error(`the writer process ended before writing: ${stderr}`);
  }
  await new Promise((resolve) => setTimeout(resolve, killAfterMs));
  child.kill('SIGKILL');
  await closed;
  expect(stderr).toBe('');
}
