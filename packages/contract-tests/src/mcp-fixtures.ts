import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CompleteSandbox, McpServerSpec, SandboxProcess } from '@ws/core';
import { sleep } from './harness.js';

/** The root of the @ws/contract-tests package (where `fixtures/` and `dist/fixtures/` live). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === '@ws/contract-tests')
      return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the @ws/contract-tests package root');
    dir = parent;
  }
}

/** Where MCP fixtures live, relative to the workdir (stdio servers start in the workdir). */
export const FIXTURE_DIR = '.ws-conformance';

/** Where MCP fixtures live inside a workspace. */
export function fixtureDir(workdir: string): string {
  return `${workdir}/${FIXTURE_DIR}`;
}

/** The test server's path, relative to the workdir, so one spec serves every workspace. */
export const TEST_SERVER = `${FIXTURE_DIR}/mcp-test-server.mjs`;
/** The bundled published memory server's path, relative to the workdir. */
export const MEMORY_SERVER = `${FIXTURE_DIR}/memory-server.mjs`;

/**
 * Uploads the MCP fixtures into the sandbox: the hand-written test server and the bundled published
 * `@modelcontextprotocol/server-memory`. Returns their paths inside the sandbox.
 */
export async function uploadMcpFixtures(
  sandbox: CompleteSandbox,
  workdir: string,
): Promise<{
  /** The hand-written test server's path inside the sandbox. */
  testServer: string;
  /** The bundled memory server's path inside the sandbox. */
  memoryServer: string;
}> {
  const root = packageRoot();
  const memoryBundle = join(root, 'dist', 'fixtures', 'memory-server.mjs');
  if (!existsSync(memoryBundle))
    throw new Error(`${memoryBundle} is missing: build @ws/contract-tests first (npm test does)`);
  const dir = fixtureDir(workdir);
  const testServer = `${dir}/mcp-test-server.mjs`;
  const memoryServer = `${dir}/memory-server.mjs`;
  await sandbox.writeFile(testServer, readFileSync(join(root, 'fixtures', 'mcp-test-server.mjs')));
  await sandbox.writeFile(memoryServer, readFileSync(memoryBundle));
  return { testServer, memoryServer };
}

/** A stdio spec for the test server (started in the workdir, where the fixtures were uploaded). */
export function stdioSpec(
  name: string,
  env: Record<string, string> = {},
  extra: Partial<McpServerSpec> = {},
): McpServerSpec {
  return { name, transport: { type: 'stdio', command: 'node', args: [TEST_SERVER], env }, ...extra };
}

/** Starts the test server over HTTP inside the sandbox; returns its base URL (loopback inside the sandbox). */
export async function startHttpServer(
  sandbox: CompleteSandbox,
  testServer: string,
  tag: string,
): Promise<{ url: string; process: SandboxProcess }> {
  const portFile = `${dirname(testServer)}/port-${tag}`;
  await sandbox.remove(portFile, { force: true });
  const process = await sandbox.spawn(['node', testServer, '--http', '0', '--port-file', portFile]);
  void (async () => {
    for await (const _ of process.stdout);
  })();
  void (async () => {
    for await (const _ of process.stderr);
  })();
  for (let attempt = 0; attempt < 200; attempt++) {
    try {
      const port = new TextDecoder().decode(await sandbox.readFile(portFile)).trim();
      if (port) return { url: `http://127.0.0.1:${port}`, process };
    } catch {
      // not written yet
    }
    await sleep(50);
  }
  await process.kill('SIGKILL');
  throw new Error('the HTTP test server did not start');
}
