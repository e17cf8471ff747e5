import { type ChildProcessWithoutNullStreams, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { requireEngine } from '@ws/contract-tests';
import { expect } from 'vitest';

/** The built command; the tests run what users run. */
export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npx turbo run build --filter @ws/cli`);
}

export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `ws …` to completion (with a generous kill switch so that a hang fails instead of blocking). */
export function runWs(args: readonly string[], env: NodeJS.ProcessEnv = {}): RunResult {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Why Docker tests cannot run here, or undefined when they can; under `CI=true` it throws instead. */
export function dockerUnavailable(): string | undefined {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 20_000 });
    return undefined;
  } catch (error) {
    return requireEngine('docker', `docker info failed: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** An MCP client of `ws serve --stdio …`. */
export async function stdioClient(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'serve', '--stdio', ...args],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'ws-cli-test', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

export interface HttpServer {
  url: string;
  /** The bearer token: WS_TOKEN when given, else the one the server generated (empty for --token-file). */
  token: string;
  /** The file holding the generated token, when the server made one. */
  tokenFile: string | undefined;
  /** The Authorization header every request needs. */
  headers: Record<string, string>;
  child: ChildProcessWithoutNullStreams;
  stop(): Promise<number | null>;
}

/** Starts `ws serve --http 0 --json …` and waits for the URL it prints. */
export async function startHttpServer(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<HttpServer> {
  const child = spawn(process.execPath, [BIN, 'serve', '--http', '0', '--json', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const { url, tokenFile } = await new Promise<{ url: string; tokenFile?: string }>((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line) resolve(JSON.parse(line) as { url: string; tokenFile?: string });
    });
    void exited.then((code) => reject(new Error(`ws serve exited with ${code}: ${stderr}`)));
  });
  const token = env.WS_TOKEN ?? (tokenFile ? readFileSync(tokenFile, 'utf8').trim() : '');
  return {
    url,
    token,
    tokenFile,
    headers: { authorization: `Bearer ${token}` },
    child,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

export async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'ws-cli-test', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

export function textOf(result: unknown): string {
  return (result as CallToolResult).content.map((item) => (item.type === 'text' ? item.text : '')).join('\n');
}

/** Lists the tools and calls each built-in one; returns the tool names. */
export async function exerciseBuiltinTools(client: Client): Promise<string[]> {
  const { tools } = await client.listTools();
  const names = tools.map((tool) => tool.name);
  expect(names).toEqual(expect.arrayContaining(['Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep']));
  const bash = tools.find((tool) => tool.name === 'Bash');
  expect(bash?.inputSchema.properties).toHaveProperty('command');
  expect(tools.find((tool) => tool.name === 'Read')?.annotations?.readOnlyHint).toBe(true);
  expect(bash?.annotations?.readOnlyHint).toBe(false);

  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError, `${name}: ${textOf(result)}`).toBeFalsy();
    return textOf(result);
  };
  const pwd = (await call('Bash', { command: 'pwd' })).trim().split('\n')[0] ?? '';
  expect(pwd.startsWith('/')).toBe(true);
  const file = `${pwd}/notes/served.txt`;
  await call('Write', { file_path: file, content: 'alpha line\nbeta line\n' });
  expect(await call('Read', { file_path: file })).toContain('alpha line');
  await call('Edit', { file_path: file, old_string: 'beta', new_string: 'gamma' });
  expect(await call('Bash', { command: 'cat notes/served.txt' })).toContain('gamma line');
  expect(await call('Glob', { pattern: '**/*.txt' })).toContain('served.txt');
  expect(await call('Grep', { pattern: 'gamma', output_mode: 'content' })).toContain('gamma line');
  const failed = (await client.callTool({
    name: 'Bash',
    arguments: { command: 'exit 7' },
  })) as CallToolResult;
  expect(failed.isError).toBe(true);
  return names;
}
