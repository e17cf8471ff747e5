import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertBuilt,
  dockerUnavailable,
  exerciseBuiltinTools,
  httpClient,
  runWs,
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

  it('over streamable HTTP: a token is always required, generated into a private file when none is given', async () => {
    const server = await startHttpServer(['--backend', 'local', '--workdir', join(scratch, 'http')]);
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      // A neighbour on the same machine (another workspace's sandbox shares the host's loopback)
      // gets nowhere without the token.
      expect((await postPing(server.url)).status).toBe(401);
      expect((await postPing(server.url, { authorization: 'Bearer wrong' })).status).toBe(401);
      expect(server.tokenFile).toBeDefined();
      expect(statSync(server.tokenFile!).mode & 0o777).toBe(0o600);
      expect(statSync(dirname(server.tokenFile!)).mode & 0o077).toBe(0);
      expect(server.token).toMatch(/^[\w-]{43}$/);
      // The served workspace's commands (the local backend inherits the environment) see no token.
      await withClient(await httpClient(server.url, server.headers), async (client) => {
        await exerciseBuiltinTools(client);
        const env = textOf(await client.callTool({ name: 'Bash', arguments: { command: 'env' } }));
        expect(env).not.toContain(server.token);
      });
    } finally {
      expect(await server.stop()).toBe(0);
    }
    expect(existsSync(dirname(server.tokenFile!))).toBe(false);
  });

  it('over streamable HTTP: takes the token from WS_TOKEN or a private file, never from argv', async () => {
    const token = 'a-token-of-32-characters-exactly';
    const fromEnv = await startHttpServer(['--backend', 'local', '--workdir', join(scratch, 'http-env')], {
      WS_TOKEN: token,
    });
    try {
      expect(fromEnv.tokenFile).toBeUndefined();
      expect((await postPing(fromEnv.url)).status).toBe(401);
      await withClient(
        await httpClient(fromEnv.url, { authorization: `Bearer ${token}` }),
        async (client) => {
          const env = textOf(await client.callTool({ name: 'Bash', arguments: { command: 'env' } }));
          expect(env).not.toContain(token);
        },
      );
    } finally {
      expect(await fromEnv.stop()).toBe(0);
    }
    const file = join(scratch, 'token');
    writeFileSync(file, `${token}\n`, { mode: 0o644 });
    chmodSync(file, 0o644);
    const workdir = ['--backend', 'local', '--workdir', join(scratch, 'http-file')];
    const loose = runWs(['serve', '--http', '0', '--token-file', file, ...workdir]);
    expect(loose.status).toBe(2);
    expect(loose.stderr).toContain('chmod 600');
    chmodSync(file, 0o600);
    const fromFile = await startHttpServer([...workdir, '--token-file', file]);
    try {
      await withClient(
        await httpClient(fromFile.url, { authorization: `Bearer ${token}` }),
        async (client) => {
          expect((await client.listTools()).tools.length).toBeGreaterThan(0);
        },
      );
    } finally {
      expect(await fromFile.stop()).toBe(0);
    }
    const onArgv = runWs(['serve', '--http', '0', '--token', token, ...workdir]);
    expect(onArgv.status).toBe(2);
    expect(onArgv.stderr).toContain('WS_TOKEN');
    const short = runWs(['serve', '--http', '0', ...workdir], { WS_TOKEN: 'short' });
    expect(short.status).toBe(2);
    expect(short.stderr).toContain('at least 16 characters');
  });

  it("over streamable HTTP: refuses a web page's request from another origin, and caps and expires sessions", async () => {
    const server = await startHttpServer([
      '--backend',
      'local',
      '--workdir',
      join(scratch, 'http-sessions'),
      '--max-sessions',
      '2',
      '--session-idle',
      '1',
    ]);
    try {
      const own = new URL(server.url).origin;
      expect((await postPing(server.url, { ...server.headers, origin: 'http://evil.example' })).status).toBe(
        403,
      );
      expect((await postPing(server.url, { ...server.headers, origin: 'null' })).status).toBe(403);
      expect([401, 403]).not.toContain(
        (await postPing(server.url, { ...server.headers, origin: own })).status,
      );
      // Sessions opened and left (no DELETE, no open stream), as a client that went away leaves them.
      const opened: string[] = [];
      for (const _ of [1, 2]) {
        const answer = await postInitialize(server.url, server.headers);
        expect(answer.status).toBe(200);
        await answer.text();
        opened.push(answer.headers.get('mcp-session-id') ?? '');
      }
      const third = await postInitialize(server.url, server.headers);
      expect(third.status).toBe(503);
      expect(await third.text()).toContain('Too many MCP sessions open (2)');
      // Idle past a second, both are closed, which makes room again.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const gone = await postPing(server.url, { ...server.headers, 'mcp-session-id': opened[0] ?? '' });
      expect(gone.status).toBe(404);
      await withClient(await httpClient(server.url, { ...server.headers, origin: own }), async (client) => {
        expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

/** A JSON-RPC POST of `message`, as a client sends it (a session id, if any, in `headers`). */
function post(url: string, message: object, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...message }),
  });
}

/** A bare `ping` POST without a session, as a client that is not MCP-aware sends it. */
function postPing(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return post(url, { method: 'ping' }, headers);
}

/** An `initialize` POST, which opens a session. */
function postInitialize(url: string, headers: Record<string, string>): Promise<Response> {
  return post(
    url,
    {
      method: 'initialize',
      params: {
        protocolVersion: '2025-03-26',
        capabilities: {},
        clientInfo: { name: 'probe', version: '0' },
      },
    },
    headers,
  );
}

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
      await withClient(await httpClient(server.url, server.headers), exerciseBuiltinTools);
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
