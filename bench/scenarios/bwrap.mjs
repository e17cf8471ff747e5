import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BubblewrapWorkspace, BwrapSandbox, bubblewrapProblem } from '@ws/bwrap';
import { interleave, median, metricRow, ratioRow } from '../harness.mjs';

export const name = 'bwrap';

// The bare sandbox's argv asks bwrap for its JSON status on fd 3, as the workspace reads it: given no
// such descriptor, bwrap fails to write it and never exits.
function spawnAndWait(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
    child.stdout.on('data', () => {});
    child.stderr.on('data', () => {});
    child.stdio[3].on('data', () => {});
    child.once('error', reject);
    child.once('close', resolve);
  });
}

// A stdio MCP server in a few lines: answers initialize, tools/list and a `ping` tool.
const SERVER = `let b='';process.stdin.on('data',c=>{b+=c;let i;while((i=b.indexOf('\\n'))>=0){const m=JSON.parse(b.slice(0,i));b=b.slice(i+1);
if(m.id===undefined)continue;let r={};if(m.method==='initialize')r={protocolVersion:m.params.protocolVersion,capabilities:{tools:{}},serverInfo:{name:'b',version:'1'}};
else if(m.method==='tools/list')r={tools:[{name:'ping',inputSchema:{type:'object'}}]};else if(m.method==='tools/call')r={content:[{type:'text',text:'pong'}]};
process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:r})+'\\n');}});`;

/** Bash round trip against a bare bwrap spawn; an MCP call through the gateway; gateway start-up. */
export async function run({ iterations }) {
  const problem = bubblewrapProblem();
  if (problem) return { skipped: problem };
  const root = await mkdtemp(join(tmpdir(), 'ws-bench-bwrap-'));
  const rows = [];
  try {
    const workspace = await BubblewrapWorkspace.open({
      hostWorkdir: join(root, 'work'),
      hostRuntimeDir: join(root, 'cache'),
    });
    try {
      const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
      const bare = new BwrapSandbox(
        { hostWorkdir: workspace.hostWorkdir, hostTmp: join(root, 'tmp'), shareNet: true, readOnlyPaths: [] },
        {},
      );
      await rm(join(root, 'tmp'), { recursive: true, force: true });
      const { mkdir } = await import('node:fs/promises');
      await mkdir(join(root, 'tmp'));
      const bareArgv = bare.argv(['/bin/sh', '-c', 'true'], '/workspace');
      const samples = await interleave({
        subject: async () => {
          const result = await bash.call({ command: 'true' });
          if (result.isError) throw new Error(JSON.stringify(result.content));
        },
        floor: () => spawnAndWait(bareArgv),
        iterations: Math.max(50, Math.round(iterations / 2)),
      });
      rows.push(
        ratioRow({
          scenario: 'bwrap Bash round trip',
          subject: "Bash 'true'",
          floor: 'bare bwrap … sh -c true',
          samples,
          target: 1.2,
        }),
      );

      await writeFile(join(workspace.hostWorkdir, 'bench-server.js'), SERVER);
      await workspace.addMcp({
        name: 'bench',
        transport: { type: 'stdio', command: 'node', args: ['bench-server.js'] },
      });
      const [client] = await workspace.listMcps();
      for (let index = 0; index < 20; index++) await client.callTool('ping', {});
      const callMs = [];
      for (let index = 0; index < iterations; index++) {
        const started = performance.now();
        await client.callTool('ping', {});
        callMs.push(performance.now() - started);
      }
      rows.push(
        metricRow({
          scenario: 'MCP call via gateway (bwrap)',
          subject: 'median tool call',
          value: median(callMs),
          unit: 'ms',
          target: 5,
        }),
      );
    } finally {
      await workspace.close();
    }

    const starts = [];
    for (let round = 0; round < 7; round++) {
      // A new runtime folder each round: the bundle is installed as well as started.
      const began = performance.now();
      const fresh = await BubblewrapWorkspace.open({
        hostWorkdir: join(root, `start-${round}`),
        hostRuntimeDir: join(root, `cache-${round}`),
      });
      await fresh.gatewayReady();
      starts.push(performance.now() - began);
      await fresh.close();
    }
    rows.push(
      metricRow({
        scenario: 'gateway ready (bwrap, fresh runtime folder)',
        subject: 'median, from open() beginning to the gateway answering',
        value: median(starts),
        unit: 'ms',
        target: 150,
      }),
    );
    return rows;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
