import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { BubblewrapWorkspace, bubblewrapProblem } from '../src/index.js';

const problem = bubblewrapProblem();
const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-gw-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const SERVER = `
let buffer='';process.stdin.on('data',c=>{buffer+=c;let i;while((i=buffer.indexOf('\\n'))>=0){const m=JSON.parse(buffer.slice(0,i));buffer=buffer.slice(i+1);
if(m.id===undefined)continue;let r;
if(m.method==='initialize')r={protocolVersion:m.params.protocolVersion,capabilities:{tools:{}},serverInfo:{name:'t',version:'1'}};
else if(m.method==='tools/list')r={tools:[{name:'where',inputSchema:{type:'object'}}]};
else if(m.method==='tools/call')r={content:[{type:'text',text:process.cwd()+' '+require('fs').existsSync('/ws/run')}]};
else r={};process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:r})+'\\n');}});`;

describe.skipIf(problem !== undefined)('bwrap gateway', () => {
  it('runs MCP servers inside the sandbox, survives a gateway crash, and restarts on the next call', async () => {
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(base, 'crash'),
      hostCacheDir: join(base, 'cache'),
    });
    try {
      await workspace.getSandbox().writeFile('server.js', SERVER);
      await workspace.addMcp({
        name: 'inside',
        transport: { type: 'stdio', command: 'node', args: ['server.js'] },
      });
      const [client] = await workspace.listMcps();
      const first = await client!.callTool('where', {});
      expect(first.content).toEqual([{ type: 'text', text: '/workspace true' }]);
      // Commands run in their own sandboxes and cannot see the gateway's socket directory.
      expect((await workspace.getSandbox().exec(['ls', '/ws'])).exitCode).not.toBe(0);
      // Kill the gateway from the host: the next call reports it with the log tail, the one after works.
      const killed = await workspace.getSandbox().exec(['true']);
      expect(killed.exitCode).toBe(0);
      const { execSync } = await import('node:child_process');
      execSync(`pkill -KILL -f 'gateway-[0-9a-f]*\\.mjs --socket' || true`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      let failure: unknown;
      try {
        await client!.callTool('where', {});
      } catch (error) {
        failure = error;
      }
      expect(isWsError(failure, 'BACKEND_UNAVAILABLE'), String(failure)).toBe(true);
      expect(String((failure as Error).message)).toMatch(/restarts on the next call|lost with the gateway/);
      // File operations keep working meanwhile (through commands), and MCP works again after the restart.
      await workspace.getSandbox().writeFile('after.txt', 'ok');
      const again = await client!.callTool('where', {});
      expect(again.content).toEqual([{ type: 'text', text: '/workspace true' }]);
    } finally {
      await workspace.close();
    }
  });

  it('rotates the gateway nonce at every launch and never leaves the token on disk or on a command line', async () => {
    const { execSync } = await import('node:child_process');
    const launches: string[] = [];
    for (let round = 0; round < 2; round++) {
      const workspace = await BubblewrapWorkspace.open({
        hostWorkdir: join(base, 'rotate'),
        hostCacheDir: join(base, 'cache'),
      });
      try {
        expect(workspace.gatewayStartMs).toBeGreaterThan(0);
        const commandLines = execSync('ps -eo args', { encoding: 'utf8' })
          .split('\n')
          .filter(
            (line) => line.includes(' --socket /ws/run/gateway.sock') && line.includes(join(base, 'rotate')),
          );
        expect(commandLines.length).toBeGreaterThan(0);
        const nonce = /--nonce ([0-9a-f]+)/.exec(commandLines[0]!)?.[1];
        expect(nonce).toMatch(/^[0-9a-f]{32}$/);
        launches.push(nonce!);
        expect(commandLines[0]).toContain('--token-file');
        const tokenFile = /--token-file \/ws\/run\/(\S+)/.exec(commandLines[0]!)?.[1];
        const runDir = execSync(`ls -d /tmp/ws-bwrap-run-* 2>/dev/null || true`, { encoding: 'utf8' })
          .trim()
          .split('\n');
        for (const dir of runDir)
          if (dir) expect(execSync(`ls ${dir}`, { encoding: 'utf8' })).not.toContain(tokenFile!);
      } finally {
        await workspace.close();
      }
    }
    expect(launches[0]).not.toBe(launches[1]);
  });

  it('without a gateway, MCP says CAPABILITY_UNSUPPORTED and files still work', async () => {
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(base, 'bare'),
      hostCacheDir: join(base, 'cache'),
      gateway: false,
    });
    try {
      expect(workspace.capabilities.mcp).toBe(false);
      let failure: unknown;
      try {
        await workspace.addMcp({ name: 'x', transport: { type: 'stdio', command: 'node' } });
      } catch (error) {
        failure = error;
      }
      expect(isWsError(failure, 'CAPABILITY_UNSUPPORTED')).toBe(true);
      await workspace.getSandbox().writeFile('a/b.txt', 'works');
      expect(new TextDecoder().decode(await workspace.getSandbox().readFile('a/b.txt'))).toBe('works');
    } finally {
      await workspace.close();
    }
  });
});
