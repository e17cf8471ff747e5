import type { CompleteSandbox, McpClient, McpServerSpec, SandboxProcess, Tool } from '@ws/core';
import { expect } from 'vitest';
import { errorText, okText, textOf } from '../fixtures.js';
import { conformanceCase, expectWsError, sleep } from '../harness.js';
import {
  FIXTURE_DIR,
  fixtureDir,
  MEMORY_SERVER,
  startHttpServer,
  stdioSpec,
  uploadMcpFixtures,
} from '../mcp-fixtures.js';
import { SH_MCP_SERVER } from '../sh-mcp-server.js';
import { afterAll, beforeAll, describe } from '../suite.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';
import {
  type McpCase,
  mcpRestartCases,
  type ReopenOptions,
  reopenWorkspace,
  requirePersistence,
} from './mcp-restart.js';

const toolNames = async (client: McpClient) => (await client.listTools()).map((tool) => tool.name).sort();
const byName = async (client: McpClient) =>
  Object.fromEntries((await client.listTools()).map((tool): [string, Tool] => [tool.name, tool]));

/** MCP: stdio, HTTP and SSE servers, a published server, scoping, persistence, eviction and timeouts. */
export function mcpArea(context: AreaContext): void {
  // MCP servers run on the host (local) or inside the sandbox behind the gateway: no case here means
  // anything on a route without either.
  describe('mcp', { decidedBy: 'gateway', takes: ['host', 'gateway'] }, () => {
    let workspace: WorkspaceUnderTest;
    let sandbox: CompleteSandbox;
    let workspaceId: string;
    let servers: { testServer: string; memoryServer: string };
    let http: { url: string; process: SandboxProcess } | undefined;
    let unsupported: string | undefined;
    /** The long call of `mcp.own-timeout`, started with the area: it only waits, so it waits beside the other cases. */
    let longCall: Promise<{ text: string; elapsedMs: number }> | undefined;

    beforeAll(async () => {
      workspaceId = context.newId();
      workspace = await context.create(workspaceId);
      await workspace.initialize();
      sandbox = workspace.getSandbox();
      if (!workspace.capabilities.mcp) {
        unsupported = `the ${workspace.capabilities.backend} workspace cannot run MCP servers here`;
        console.warn(`[conformance] ${context.target.name}: MCP cases skipped: ${unsupported}`);
        return;
      }
      servers = await uploadMcpFixtures(sandbox, workspace.workdir);
      http = await startHttpServer(sandbox, servers.testServer, 'main');
      await workspace.addMcp(stdioSpec('patient'), { agentId: 'patient' });
      const [patient] = await workspace.listMcps({ agentId: 'patient' });
      const started = Date.now();
      longCall = patient!
        .callTool('sleep', { ms: context.longMcpCallMs })
        .then((result) => ({ text: okText(result), elapsedMs: Date.now() - started }));
      // Collected by mcp.own-timeout; a run without that case must not see an unhandled rejection.
      longCall.catch(() => {});
    }, context.caseTimeoutMs);

    afterAll(async () => {
      await http?.process.kill('SIGKILL').catch(() => {});
      await workspace?.close();
    }, context.caseTimeoutMs);

    const mcpCase: McpCase = (id, title, body, options) =>
      conformanceCase(
        context,
        id,
        title,
        async (test) => {
          if (unsupported) test.skip(unsupported);
          await body(test);
        },
        options,
      );
    const reopen = (options: ReopenOptions, id: string) => reopenWorkspace(context, options, id);

    conformanceCase(
      context,
      'mcp.unsupported',
      'refuses declarations with CAPABILITY_UNSUPPORTED where MCP cannot run',
      async (test) => {
        if (!unsupported) test.skip(`the ${workspace.capabilities.backend} workspace runs MCP servers`);
        expect(await workspace.listMcps()).toEqual([]);
        await expectWsError(
          () => workspace.addMcp(stdioSpec('probe'), { agentId: 'probe' }),
          'CAPABILITY_UNSUPPORTED',
        );
        const withDefaults = await context.create(context.newId(), { defaultMcps: [stdioSpec('seed')] });
        try {
          await withDefaults.initialize();
          await expectWsError(() => withDefaults.listMcps(), 'CAPABILITY_UNSUPPORTED');
        } finally {
          await withDefaults.close();
        }
      },
      { decidedBy: 'engine', takes: ['direct'] },
    );

    mcpCase(
      'mcp.stdio',
      'connects a stdio server, lists mcp__<server>__<tool> tools and calls them',
      async () => {
        await workspace.addMcp(stdioSpec('local', { GREETING: 'hi "there"' }), { agentId: 'stdio' });
        const [client] = await workspace.listMcps({ agentId: 'stdio' });
        expect(client?.name).toBe('local');
        expect(await toolNames(client!)).toEqual([
          'mcp__local__add',
          'mcp__local__counter',
          'mcp__local__cwd',
          'mcp__local__echo',
          'mcp__local__env',
          'mcp__local__exit',
          'mcp__local__fail',
          'mcp__local__gateway-listens',
          'mcp__local__kill-gateway',
          'mcp__local__pid',
          'mcp__local__pixel',
          'mcp__local__sh',
          'mcp__local__sleep',
        ]);
        const tools = await byName(client!);
        expect(tools.mcp__local__echo?.annotations.readOnlyHint).toBe(true);
        expect(tools.mcp__local__add?.annotations.readOnlyHint).toBe(false);
        expect(tools.mcp__local__add?.inputSchema).toMatchObject({ type: 'object', required: ['a', 'b'] });
        expect(okText(await tools.mcp__local__echo!.call({ text: 'über "quoted"' }))).toBe('über "quoted"');
        const sum = await tools.mcp__local__add!.call({ a: 2, b: 40 });
        expect(okText(sum)).toBe('42');
        expect(sum.metadata).toEqual({ structuredContent: { sum: 42 } });
        expect(okText(await tools.mcp__local__env!.call({ name: 'GREETING' }))).toBe('hi "there"');
        expect(okText(await tools.mcp__local__cwd!.call({}))).toBe(workspace.workdir);
        expect((await tools.mcp__local__pixel!.call({})).content[0]).toMatchObject({
          type: 'image',
          mimeType: 'image/png',
        });
        expect(errorText(await tools.mcp__local__fail!.call({}))).toBe('failed on purpose');
        expect(okText(await client!.callTool('counter', {}))).toBe('1');
        expect(okText(await client!.callTool('counter', {}))).toBe('2');
      },
    );

    mcpCase(
      'mcp.http',
      'connects a streamable HTTP server and SSE servers: a URL ending in /sse or /messages/ (as AgentScope chooses), or any URL with type sse',
      async () => {
        await workspace.addMcp(
          {
            name: 'remote',
            transport: { type: 'http', url: `${http!.url}/mcp`, headers: { 'x-test': '1' } },
          },
          { agentId: 'http' },
        );
        await workspace.addMcp(
          { name: 'legacy', transport: { type: 'http', url: `${http!.url}/sse` }, stateful: true },
          { agentId: 'http' },
        );
        await workspace.addMcp(
          { name: 'messages', transport: { type: 'http', url: `${http!.url}/messages/` }, stateful: true },
          { agentId: 'http' },
        );
        // A path that names no protocol: over streamable HTTP it would fail (the server has none there).
        await workspace.addMcp(
          { name: 'named', transport: { type: 'sse', url: `${http!.url}/stream` }, stateful: true },
          { agentId: 'http' },
        );
        const clients = await workspace.listMcps({ agentId: 'http' });
        expect(clients.map((client) => client.name)).toEqual(['remote', 'legacy', 'messages', 'named']);
        for (const client of clients) {
          expect(okText(await client.callTool('echo', { text: `via ${client.name}` }))).toBe(
            `via ${client.name}`,
          );
          const tools = await byName(client);
          expect(okText(await tools[`mcp__${client.name}__add`]!.call({ a: 1, b: 2 }))).toBe('3');
        }
      },
    );

    mcpCase(
      'mcp.published-server',
      'runs the published @modelcontextprotocol/server-memory from npm',
      async () => {
        // The server resolves a relative MEMORY_FILE_PATH against its own folder.
        const memoryFile = `${fixtureDir(workspace.workdir)}/memory.jsonl`;
        await workspace.addMcp(
          {
            name: 'memory',
            transport: {
              type: 'stdio',
              command: 'node',
              args: [MEMORY_SERVER],
              env: { MEMORY_FILE_PATH: 'memory.jsonl' },
            },
          },
          { agentId: 'published' },
        );
        const [memory] = await workspace.listMcps({ agentId: 'published' });
        const tools = await byName(memory!);
        expect(Object.keys(tools)).toEqual(
          expect.arrayContaining([
            'mcp__memory__create_entities',
            'mcp__memory__read_graph',
            'mcp__memory__search_nodes',
          ]),
        );
        okText(
          await tools.mcp__memory__create_entities!.call({
            entities: [{ name: 'Workspace', entityType: 'project', observations: ['runs agents'] }],
          }),
        );
        expect(okText(await tools.mcp__memory__read_graph!.call({}))).toContain('runs agents');
        expect(await sandbox.exists(memoryFile)).toBe(true);
      },
    );

    mcpCase(
      'mcp.scopes',
      'gives each (agent, session) scope its own instances of the defaults, and no .mcp until one diverges',
      async () => {
        const id = context.newId();
        const scoped = await reopen({ defaultMcps: [stdioSpec('shared')] }, id);
        try {
          const pidOf = async (agentId: string, sessionId: string) =>
            textOf(await (await scoped.listMcps({ agentId, sessionId }))[0]!.callTool('pid', {}));
          const a = await pidOf('a', 's1');
          expect(await pidOf('a', 's1')).toBe(a);
          const b = await pidOf('b', 's1');
          const c = await pidOf('a', 's2');
          expect(new Set([a, b, c]).size).toBe(3);
          expect(await scoped.getSandbox().exists(`${scoped.workdir}/.mcp`)).toBe(false);
        } finally {
          await scoped.close();
        }
      },
    );

    mcpCase(
      'mcp.add-remove',
      'adds and removes per scope, refuses duplicates within a scope, and persists .mcp v2',
      async () => {
        const id = context.newId();
        const seed = stdioSpec('seed');
        const scoped = await reopen({ defaultMcps: [seed] }, id);
        try {
          await scoped.addMcp(stdioSpec('extra'), { agentId: 'A', sessionId: 's1' });
          expect(
            (await scoped.listMcps({ agentId: 'A', sessionId: 's1' })).map((client) => client.name),
          ).toEqual(['seed', 'extra']);
          expect(
            (await scoped.listMcps({ agentId: 'B', sessionId: 's1' })).map((client) => client.name),
          ).toEqual(['seed']);
          await expectWsError(
            () => scoped.addMcp(stdioSpec('extra'), { agentId: 'A', sessionId: 's1' }),
            'CONFLICT',
          );
          await scoped.addMcp(stdioSpec('extra'), { agentId: 'B', sessionId: 's1' });
          await scoped.removeMcp('not-there', { agentId: 'A', sessionId: 's1' });
          await scoped.removeMcp('extra', { agentId: 'B', sessionId: 's1' });
          if (scoped.capabilities.persistent) {
            const file = JSON.parse(
              new TextDecoder().decode(await scoped.getSandbox().readFile(`${scoped.workdir}/.mcp`)),
            );
            expect(file.version).toBe(2);
            expect(Object.keys(file.mcps).sort()).toEqual(['A', 'B']);
            expect(file.mcps.A.s1.map((entry: { name: string }) => entry.name)).toEqual(['seed', 'extra']);
            expect(file.mcps.A.s1[1]).toEqual({
              name: 'extra',
              is_stateful: true,
              mcp_config: {
                type: 'stdio_mcp',
                command: 'node',
                args: [`${FIXTURE_DIR}/mcp-test-server.mjs`],
                env: {},
                cwd: null,
                encoding_error_handler: 'strict',
              },
              enable_tools: null,
              disable_tools: null,
              execution_timeout: null,
            });
            expect(file.mcps.B.s1.map((entry: { name: string }) => entry.name)).toEqual(['seed']);
          }
        } finally {
          await scoped.close();
        }
      },
    );

    mcpRestartCases(context, mcpCase);

    mcpCase(
      'mcp.filters-and-errors',
      'applies enableTools/disableTools and refuses invalid specs',
      async () => {
        await workspace.addMcp(stdioSpec('filtered', {}, { enableTools: ['echo', 'add'] }), {
          agentId: 'filters',
        });
        await workspace.addMcp(stdioSpec('hidden', {}, { disableTools: ['fail'] }), { agentId: 'filters' });
        const [filtered, hidden] = await workspace.listMcps({ agentId: 'filters' });
        expect(await toolNames(filtered!)).toEqual(['mcp__filtered__add', 'mcp__filtered__echo']);
        expect(await toolNames(hidden!)).not.toContain('mcp__hidden__fail');
        await expectWsError(() => filtered!.callTool('pid', {}), 'NOT_FOUND');
        const bad: McpServerSpec[] = [
          stdioSpec('bad name'),
          stdioSpec('x', {}, { stateful: false }),
          stdioSpec('y', {}, { enableTools: ['a'], disableTools: ['a'] }),
          { name: 'z', transport: { type: 'http', url: 'ftp://example.com' } },
          stdioSpec('t', {}, { executionTimeoutMs: -1 }),
        ];
        for (const spec of bad)
          await expectWsError(() => workspace.addMcp(spec, { agentId: 'filters' }), 'INVALID_ARGUMENT');
        await expectWsError(() => workspace.listMcps({ agentId: '../x' }), 'INVALID_ARGUMENT');
        await expectWsError(
          () => workspace.addMcp(stdioSpec('ok'), { sessionId: 'a/b' }),
          'INVALID_ARGUMENT',
        );
        await expectWsError(
          () =>
            workspace.addMcp(
              { name: 'broken', transport: { type: 'stdio', command: 'ws-no-such-mcp-server' } },
              { agentId: 'filters' },
            ),
          'BACKEND_UNAVAILABLE',
        );
        expect((await workspace.listMcps({ agentId: 'filters' })).map((client) => client.name)).toEqual([
          'filtered',
          'hidden',
        ]);
      },
    );

    mcpCase(
      'mcp.own-timeout',
      'gives each call its own timeout: a short one fails, a long call succeeds when its timeout allows',
      async () => {
        await workspace.addMcp(stdioSpec('quick', {}, { executionTimeoutMs: 300 }), { agentId: 'timeouts' });
        const [quick] = await workspace.listMcps({ agentId: 'timeouts' });
        const quickTools = await byName(quick!);
        expect(errorText(await quickTools.mcp__quick__sleep!.call({ ms: 3_000 }))).toMatch(
          /within 300 ms|timed out/,
        );
        // The long call began with the area, on a server declared without a timeout of its own.
        const { text, elapsedMs } = await longCall!;
        expect(text).toBe(`slept ${context.longMcpCallMs}`);
        expect(elapsedMs).toBeGreaterThanOrEqual(context.longMcpCallMs - 50);
      },
      context.longMcpCallMs + 60_000,
    );

    mcpCase('mcp.abort', 'aborts a running tool call', async () => {
      await workspace.addMcp(stdioSpec('abortable'), { agentId: 'abort' });
      const [client] = await workspace.listMcps({ agentId: 'abort' });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 200);
      await expectWsError(
        () => client!.callTool('sleep', { ms: 20_000 }, { signal: controller.signal }),
        'ABORTED',
      );
      expect(okText(await client!.callTool('echo', { text: 'alive' }))).toBe('alive');
    });

    mcpCase(
      'mcp.close-stops-servers',
      'close stops the stdio servers the workspace started',
      async (test) => {
        const id = context.newId();
        const heartbeat = `${FIXTURE_DIR}/heartbeat`;
        const scoped = await reopen(
          { defaultMcps: [stdioSpec('beating', { WS_MCP_HEARTBEAT: heartbeat })] },
          id,
        );
        expect(await scoped.listMcps()).toHaveLength(1);
        await scoped.close();
        await expectWsError(() => scoped.listMcps(), 'DISPOSED');
        requirePersistence(scoped, test);
        // Look through a second workspace on the same files: the beat must have stopped.
        const watcher = await context.create(id);
        try {
          await watcher.initialize();
          const read = async () =>
            new TextDecoder().decode(await watcher.getSandbox().readFile(`${watcher.workdir}/${heartbeat}`));
          await sleep(400);
          const before = await read();
          await sleep(500);
          expect(await read()).toBe(before);
        } finally {
          await watcher.close();
        }
      },
    );
  });

  // Where the backend places the host's node in a sandbox whose image has none (each backend its own way).
  describe('mcp: node-less image', { decidedBy: 'backend' }, () => {
    conformanceCase(
      context,
      'mcp.node-less-image',
      "runs a stdio MCP server on an image without node: the gateway brings the host's, placed once per sandbox",
      async (test) => {
        const nodeless = context.target.nodeless;
        if (!nodeless) return test.skip('the target has no node-less image');
        const id = context.newId();
        const first = await nodeless({ workspaceId: id });
        let second: WorkspaceUnderTest | undefined;
        try {
          await first.initialize();
          const probe = await first
            .getSandbox()
            .exec(['sh', '-c', 'command -v node || echo none'], { timeoutMs: 30_000 });
          expect(probe.stdoutText.trim(), 'the image must have no node of its own').toBe('none');
          expect(first.capabilities.mcp, JSON.stringify(first.warnings)).toBe(true);
          await first.getSandbox().writeFile(`${first.workdir}/kernel-server.sh`, SH_MCP_SERVER);
          const spec: McpServerSpec = {
            name: 'kernel',
            transport: { type: 'stdio', command: 'sh', args: ['kernel-server.sh'] },
          };
          await first.addMcp(spec);
          const [client] = await first.listMcps();
          expect(okText(await client!.callTool('kernel', {}))).toBe('Linux');
          // The placed node, as the sandbox sees it: a second object on the same sandbox finds it there.
          const placed = `find / -path /proc -prune -o -type f -name 'node-${process.version}-linux-*' -print -quit 2>/dev/null | xargs -r stat -c '%n %i %Y %s'`;
          const before = (
            await first.getSandbox().exec(['sh', '-c', placed], { timeoutMs: 60_000 })
          ).stdoutText.trim();
          expect(before).toMatch(/ \d+ \d+ \d+$/);
          second = await nodeless({ workspaceId: id });
          await second.initialize();
          expect(second.capabilities.mcp, JSON.stringify(second.warnings)).toBe(true);
          await second.addMcp(spec, { agentId: 'second' });
          const [again] = await second.listMcps({ agentId: 'second' });
          expect(okText(await again!.callTool('kernel', {}))).toBe('Linux');
          const after = (
            await second.getSandbox().exec(['sh', '-c', placed], { timeoutMs: 60_000 })
          ).stdoutText.trim();
          expect(after, 'the node is placed once per sandbox').toBe(before);
        } finally {
          await second?.close();
          await first.close();
        }
      },
      Math.max(context.caseTimeoutMs, 180_000),
    );
  });
}
