import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { isWsError } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { BubblewrapWorkspace, bubblewrapProblem } from '../src/index.js';

const problem = requireEngine('bubblewrap', bubblewrapProblem());
if (problem) console.warn(`[bwrap-gateway] skipped: ${problem}`);
const base = mkdtempSync(join(tmpdir(), 'ws-bwrap-gw-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const SERVER = `
let buffer='';process.stdin.on('data',c=>{buffer+=c;let i;while((i=buffer.indexOf('\\n'))>=0){const m=JSON.parse(buffer.slice(0,i));buffer=buffer.slice(i+1);
if(m.id===undefined)continue;let r;
if(m.method==='initialize')r={protocolVersion:m.params.protocolVersion,capabilities:{tools:{}},serverInfo:{name:'t',version:'1'}};
else if(m.method==='tools/list')r={tools:[{name:'where',inputSchema:{type:'object'}},{name:'kill-gateway',inputSchema:{type:'object'}}]};
else if(m.method==='tools/call'&&m.params.name==='kill-gateway'){process.kill(process.ppid,'SIGKILL');continue;}
else if(m.method==='tools/call')r={content:[{type:'text',text:process.cwd()+' '+require('fs').existsSync('/ws/run')}]};
else r={};process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:r})+'\\n');}});`;

// An MCP server whose one tool lists /ws/run, as seen from inside the gateway's sandbox.
const LIST_RUN = `process.stdin.on('data',c=>{for(const l of String(c).split('\\n')){if(!l)continue;const m=JSON.parse(l);if(m.id===undefined)continue;
let r={};if(m.method==='initialize')r={protocolVersion:m.params.protocolVersion,capabilities:{tools:{}},serverInfo:{name:'ls',version:'1'}};
else if(m.method==='tools/list')r={tools:[{name:'ls',inputSchema:{type:'object'}}]};
else if(m.method==='tools/call')r={content:[{type:'text',text:require('fs').readdirSync('/ws/run').join(',')}]};
process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:r})+'\\n');}});`;

describe.skipIf(problem !== undefined)('bwrap gateway', () => {
  it('runs MCP servers inside the sandbox, survives a gateway crash, and restarts on the next call', async () => {
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(base, 'crash'),
      hostRuntimeDir: join(base, 'cache'),
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
      // The MCP server (a child of the gateway) kills the gateway in the middle of a call: that call
      // fails saying it may have run, and is not made again.
      let failure: unknown;
      try {
        await client!.callTool('kill-gateway', {});
      } catch (error) {
        failure = error;
      }
      expect(isWsError(failure, 'BACKEND_UNAVAILABLE'), String(failure)).toBe(true);
      expect((failure as { details?: Record<string, unknown> }).details?.mayHaveRun).toBe(true);
      expect(String((failure as Error).message)).toMatch(/restarts on the next call/);
      // File operations keep working meanwhile (through commands), and MCP works again after the restart.
      await workspace.getSandbox().writeFile('after.txt', 'ok');
      const again = await client!.callTool('where', {});
      expect(again.content).toEqual([{ type: 'text', text: '/workspace true' }]);
    } finally {
      await workspace.close();
    }
  });

  it('passes the token on stdin only: never on disk, on a command line or in an environment', async () => {
    const { execSync } = await import('node:child_process');
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(base, 'secrets'),
      hostRuntimeDir: join(base, 'cache'),
    });
    try {
      expect(await workspace.gatewayReady()).toBeGreaterThan(0);
      // The gateway's sandbox is the only process with --secrets-stdin on its command line and this workdir.
      const pids = execSync('ps -eo pid=,args=', { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes('--secrets-stdin') && line.includes(join(base, 'secrets')))
        .map((line) => line.trim().split(' ')[0]!);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
        expect(args).not.toMatch(/token/i);
        expect(environ).not.toContain('WS_GATEWAY_TOKEN');
      }
      // Inside, the gateway's runtime folder holds its socket and nothing else.
      await workspace.addMcp({
        name: 'ls',
        transport: { type: 'stdio', command: 'node', args: ['-e', LIST_RUN] },
      });
      const [client] = await workspace.listMcps();
      const listed = (await client!.callTool('ls', {})).content[0] as { text: string };
      expect(listed.text).toMatch(/^gateway-[0-9a-f]{12}\.sock$/);
    } finally {
      await workspace.close();
    }
  });

  it('without a gateway, MCP says CAPABILITY_UNSUPPORTED and files still work', async () => {
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(base, 'bare'),
      hostRuntimeDir: join(base, 'cache'),
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
