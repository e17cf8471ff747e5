import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertBuilt,
  dockerUnavailable,
  exerciseBuiltinTools,
  httpClient,
  startHttpServer,
  stdioClient,
  textOf,
} from './helpers.js';

beforeAll(assertBuilt);

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ws-cli-serve-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A tiny MCP server (the SDK's low-level Server over stdio) with one `shout` tool. */
async function writeShoutServer(): Promise<string> {
  const sdk = (path: string) =>
    pathToFileURL(
      createRequire(import.meta.url)
        .resolve(`@modelcontextprotocol/sdk/${path}`)
        .replace('/dist/cjs/', '/dist/esm/'),
    ).href;
  const script = join(scratch, 'shout-server.mjs');
  await writeFile(
    script,
    `import { Server } from ${JSON.stringify(sdk('server/index.js'))};
import { StdioServerTransport } from ${JSON.stringify(sdk('server/stdio.js'))};
import { CallToolRequestSchema, ListToolsRequestSchema } from ${JSON.stringify(sdk('types.js'))};
const server = new Server({ name: 'shout', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{
  name: 'shout', description: 'Upper-cases its text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  annotations: { readOnlyHint: true },
}] }));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: 'text', text: String(request.params.arguments?.text ?? '').toUpperCase() + '!' }],
}));
await server.connect(new StdioServerTransport());
`,
  );
  const config = join(scratch, 'mcp.json');
  await writeFile(
    config,
    JSON.stringify({ mcpServers: { loud: { command: process.execPath, args: [script] } } }),
  );
  return config;
}

async function withClient<T>(client: Client, body: (client: Client) => Promise<T>): Promise<T> {
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

describe('ws serve --backend local', () => {
  it('over stdio: lists and calls every tool, MCP servers included as mcp__ tools', async () => {
    const workdir = join(scratch, 'stdio');
    const config = await writeShoutServer();
    await withClient(
      await stdioClient(['--backend', 'local', '--workdir', workdir, '--mcp-config', config]),
      async (client) => {
        expect(client.getServerVersion()?.name).toBe('ws');
        expect(client.getInstructions()).toContain(workdir);
        const names = await exerciseBuiltinTools(client);
        expect(names).toContain('mcp__loud__shout');
        const { tools } = await client.listTools();
        expect(tools.find((tool) => tool.name === 'mcp__loud__shout')?.annotations?.readOnlyHint).toBe(true);
        const shouted = await client.callTool({ name: 'mcp__loud__shout', arguments: { text: 'hello' } });
        expect(textOf(shouted)).toBe('HELLO!');
      },
    );
    expect(readFileSync(join(workdir, 'notes/served.txt'), 'utf8')).toBe('alpha line\ngamma line\n');
  });

  it('serves the skills as resources and reports progress on long calls', async () => {
    const skill = join(scratch, 'skill-src', 'greeting');
    await mkdir(skill, { recursive: true });
    await writeFile(
      join(skill, 'SKILL.md'),
      '---\nname: greeting\ndescription: How to greet.\n---\nSay hello.\n',
    );
    const client = await stdioClient(['--workdir', join(scratch, 'skills'), '--skill', skill], {
      WS_PROGRESS_INTERVAL_MS: '100',
    });
    await withClient(client, async () => {
      const { resources } = await client.listResources();
      expect(resources).toEqual([
        {
          uri: 'skill://greeting/SKILL.md',
          name: 'greeting',
          description: 'How to greet.',
          mimeType: 'text/markdown',
        },
      ]);
      const read = await client.readResource({ uri: 'skill://greeting/SKILL.md' });
      expect(read.contents[0]).toMatchObject({
        mimeType: 'text/markdown',
        text: expect.stringContaining('Say hello.'),
      });
      await expect(client.readResource({ uri: 'skill://nope/SKILL.md' })).rejects.toThrow(/Unknown resource/);

      const progress: string[] = [];
      const result = await client.callTool(
        { name: 'Bash', arguments: { command: 'sleep 1; echo slept' } },
        undefined,
        {
          onprogress: (notification) => progress.push(notification.message ?? ''),
        },
      );
      expect(textOf(result)).toContain('slept');
      expect(progress.length).toBeGreaterThan(0);
      expect(progress[0]).toMatch(/^Bash still running/);
    });
  });

  it('offloads an over-size result into the workspace and returns a preview with its path', async () => {
    const workdir = join(scratch, 'offload');
    await withClient(
      await stdioClient(['--workdir', workdir, '--max-result-chars', '1000']),
      async (client) => {
        const result = await client.callTool({
          name: 'Bash',
          arguments: { command: "printf 'x%.0s' $(seq 5000); echo END" },
        });
        const text = textOf(result);
        expect(text.length).toBeLessThan(5000);
        const path = /the whole result is in (\S+):/.exec(text)?.[1];
        expect(path).toBeDefined();
        expect(readFileSync(path as string, 'utf8')).toContain(`${'x'.repeat(5000)}END`);
      },
    );
  });

  it('an unknown tool is a protocol error', async () => {
    await withClient(
      await stdioClient(['--backend', 'local', '--workdir', join(scratch, 'unknown')]),
      async (client) => {
        await expect(client.callTool({ name: 'Nope', arguments: {} })).rejects.toThrow(/Unknown tool "Nope"/);
      },
    );
  });

  it('cancelling a long Bash call kills the command', async () => {
    const workdir = join(scratch, 'cancel');
    await withClient(await stdioClient(['--backend', 'local', '--workdir', workdir]), async (client) => {
      const controller = new AbortController();
      const call = client.callTool(
        { name: 'Bash', arguments: { command: 'echo $$ > sleeper.pid; exec sleep 300' } },
        undefined,
        { signal: controller.signal, timeout: 600_000 },
      );
      const pidFile = join(workdir, 'sleeper.pid');
      while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8').trim() === '') {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      expect(alive(pid)).toBe(true);
      controller.abort();
      await expect(call).rejects.toThrow();
      // The server kills the process group on cancellation; wait for it (bounded, not timed).
      for (let attempt = 0; attempt < 200 && alive(pid); attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(alive(pid)).toBe(false);
      // The server is still usable after a cancellation.
      expect(
        textOf(await client.callTool({ name: 'Bash', arguments: { command: 'echo still here' } })),
      ).toContain('still here');
    });
  });

  it('over streamable HTTP: lists and calls every tool; a token is enforced when given', async () => {
    const server = await startHttpServer([
      '--backend',
      'local',
      '--workdir',
      join(scratch, 'http'),
      '--token',
      's3cret',
    ]);
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const refused = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(refused.status).toBe(401);
      await expect(httpClient(server.url, { authorization: 'Bearer wrong' })).rejects.toThrow();
      await withClient(
        await httpClient(server.url, { authorization: 'Bearer s3cret' }),
        exerciseBuiltinTools,
      );
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

const noDocker = dockerUnavailable();
if (noDocker) console.log(`skipping ws serve --backend docker: ${noDocker}`);

describe.skipIf(noDocker !== undefined)('ws serve --backend docker', () => {
  it('over stdio: lists and calls every tool', async () => {
    await withClient(await stdioClient(['--backend', 'docker']), async (client) => {
      expect(client.getInstructions()).toContain('/workspace');
      await exerciseBuiltinTools(client);
      const uname = (await client.callTool({
        name: 'Bash',
        arguments: { command: 'cat /etc/os-release' },
      })) as CallToolResult;
      expect(textOf(uname)).toMatch(/debian/i);
    });
  });

  it('over streamable HTTP: lists and calls every tool', async () => {
    const server = await startHttpServer(['--backend', 'docker']);
    try {
      await withClient(await httpClient(server.url), exerciseBuiltinTools);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
