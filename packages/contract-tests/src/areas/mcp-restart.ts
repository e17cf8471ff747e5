// MCP cases that open workspaces of their own on fresh ids: what a restart keeps (an emptied scope, a
// damaged .mcp), reset and purge, a default that cannot start, and the cap on live stateful clients.
import type { McpServerSpec } from '@ws/core';
import { expect } from 'vitest';
import { okText } from '../fixtures.js';
import type { CaseControls, CaseOptions } from '../harness.js';
import { FIXTURE_DIR, stdioSpec, uploadMcpFixtures } from '../mcp-fixtures.js';
import type { AreaContext, WorkspaceUnderTest } from '../target.js';

/** Registers one MCP case (skipped, visibly, where the workspace cannot run MCP servers). */
export type McpCase = (
  id: string,
  title: string,
  body: (test: CaseControls) => Promise<void>,
  options?: number | CaseOptions,
) => void;

/** Options of a workspace a case opens for itself. */
export interface ReopenOptions {
  defaultMcps?: McpServerSpec[];
  maxLiveStatefulMcps?: number;
}

/** Skips the rest of a case, visibly, on a workspace whose files do not outlive it. */
export function requirePersistence(workspace: WorkspaceUnderTest, test: CaseControls): void {
  if (!workspace.capabilities.persistent)
    test.skip(
      `the ${workspace.capabilities.backend} workspace declares persistent: false; nothing to restart into`,
    );
}

/** Another workspace (by id) with options, initialized, with the fixtures uploaded. */
export async function reopenWorkspace(
  context: AreaContext,
  options: ReopenOptions,
  id: string,
): Promise<WorkspaceUnderTest> {
  const other = await context.create(id, options);
  await other.initialize();
  await uploadMcpFixtures(other.getSandbox(), other.workdir);
  return other;
}

/** The cases above, in the MCP area's describe block. */
export function mcpRestartCases(context: AreaContext, mcpCase: McpCase): void {
  const reopen = (options: ReopenOptions, id: string) => reopenWorkspace(context, options, id);

  mcpCase(
    'mcp.empty-persists',
    'an emptied scope stays empty after a restart while others keep the defaults',
    async (test) => {
      const id = context.newId();
      const defaults = [stdioSpec('seed')];
      const first = await reopen({ defaultMcps: defaults }, id);
      await first.removeMcp('seed', { agentId: 'quiet' });
      expect(await first.listMcps({ agentId: 'quiet' })).toEqual([]);
      await first.close();
      requirePersistence(first, test);
      const second = await reopen({ defaultMcps: defaults }, id);
      try {
        expect(await second.listMcps({ agentId: 'quiet' })).toEqual([]);
        expect((await second.listMcps({ agentId: 'loud' })).map((client) => client.name)).toEqual(['seed']);
      } finally {
        await second.close();
      }
    },
    { decidedBy: 'engine' },
  );

  mcpCase(
    'mcp.restore-tolerant',
    'starts with a corrupt or partly invalid .mcp, keeping the valid entries',
    async (test) => {
      const id = context.newId();
      const setup = await reopen({}, id);
      const file = `${setup.workdir}/.mcp`;
      await setup.getSandbox().writeFile(file, '{ not json');
      await setup.close();
      const corrupt = await reopen({ defaultMcps: [stdioSpec('seed')] }, id);
      try {
        expect((await corrupt.listMcps({ agentId: 'any' })).map((client) => client.name)).toEqual(['seed']);
        const args = [`${FIXTURE_DIR}/mcp-test-server.mjs`];
        const good = {
          name: 'good',
          is_stateful: true,
          mcp_config: { type: 'stdio_mcp', command: 'node', args },
        };
        const bad = {
          name: 'bad',
          is_stateful: false,
          mcp_config: { type: 'stdio_mcp', command: 'node', args },
        };
        await corrupt.getSandbox().writeFile(file, JSON.stringify([bad, good, { name: 'bad name!' }]));
      } finally {
        await corrupt.close();
      }
      requirePersistence(setup, test);
      const legacy = await reopen({}, id);
      try {
        expect((await legacy.listMcps()).map((client) => client.name)).toEqual(['good']);
        expect(legacy.warnings?.length).toBeGreaterThan(0);
      } finally {
        await legacy.close();
      }
    },
    { decidedBy: 'engine' },
  );

  mcpCase(
    'mcp.reset-and-purge',
    'reset deletes .mcp; purgeSession drops the scope and its session folder',
    async () => {
      const id = context.newId();
      const scoped = await reopen({ defaultMcps: [stdioSpec('seed')] }, id);
      try {
        await scoped.removeMcp('seed', { agentId: 'A', sessionId: 's' });
        await scoped.offloadContext('s', [{ note: 1 }]);
        await scoped.purgeSession({ agentId: 'A', sessionId: 's' });
        expect(await scoped.getSandbox().exists(`${scoped.workdir}/sessions/s`)).toBe(false);
        expect(
          (await scoped.listMcps({ agentId: 'A', sessionId: 's' })).map((client) => client.name),
        ).toEqual(['seed']);
        await scoped.removeMcp('seed', { agentId: 'B' });
        await scoped.reset();
        expect(await scoped.getSandbox().exists(`${scoped.workdir}/.mcp`)).toBe(false);
        expect((await scoped.listMcps({ agentId: 'B' })).map((client) => client.name)).toEqual(['seed']);
      } finally {
        await scoped.close();
      }
    },
    { decidedBy: 'engine' },
  );

  mcpCase(
    'mcp.capacity',
    'caps live stateful clients by evicting other scopes, never the caller, and reconnects on use',
    async () => {
      const id = context.newId();
      const log = `${FIXTURE_DIR}/starts.log`;
      const defaults = [stdioSpec('one', { WS_MCP_LOG: log }), stdioSpec('two', { WS_MCP_LOG: log })];
      const capped = await reopen({ defaultMcps: defaults, maxLiveStatefulMcps: 2 }, id);
      const starts = async () =>
        new TextDecoder()
          .decode(await capped.getSandbox().readFile(`${capped.workdir}/${log}`))
          .trim()
          .split('\n').length;
      try {
        const a = await capped.listMcps({ agentId: 'A' });
        expect(a).toHaveLength(2);
        expect(await starts()).toBe(2);
        expect(await capped.listMcps({ agentId: 'B' })).toHaveLength(2);
        expect(await starts()).toBe(4);
        expect(await capped.listMcps({ agentId: 'A' })).toHaveLength(2);
        expect(await starts()).toBe(6);
        // B's clients were evicted; using one reopens it (evicting one of A's).
        const [b1] = await capped.listMcps({ agentId: 'B' });
        expect(await starts()).toBe(8);
        expect(okText(await b1!.callTool('echo', { text: 'still works' }))).toBe('still works');
        expect(okText(await a[0]!.callTool('echo', { text: 'A too' }))).toBe('A too');
      } finally {
        await capped.close();
      }
    },
    { decidedBy: 'engine' },
  );

  mcpCase(
    'mcp.broken-default',
    'leaves a default that cannot start out of the list without failing the others',
    async () => {
      const id = context.newId();
      const scoped = await reopen(
        {
          defaultMcps: [
            { name: 'broken', transport: { type: 'stdio', command: 'ws-no-such-mcp-server' } },
            stdioSpec('fine'),
          ],
        },
        id,
      );
      try {
        expect((await scoped.listMcps()).map((client) => client.name)).toEqual(['fine']);
        expect(scoped.warnings?.some((warning) => warning.includes('broken'))).toBe(true);
      } finally {
        await scoped.close();
      }
    },
  );
}
