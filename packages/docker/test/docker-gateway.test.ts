import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import { generateId, isWsError } from '@ws/core';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerSandbox } from '../src/docker-sandbox.js';
import { DEFAULT_DOCKER_IMAGE, DockerWorkspace, dockerProblem, removeOwnedContainers } from '../src/index.js';

const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
const bare = `${image}-bare`;
const problem = requireEngine('docker', await dockerProblem(image));
const bareProblem = problem ?? requireEngine('docker', await dockerProblem(bare));
if (problem) console.warn(`[docker-gateway] skipped: ${problem}`);
else if (bareProblem) console.warn(`[docker-gateway] cases on ${bare} skipped: ${bareProblem}`);
const docker = new Docker();
const base = mkdtempSync(join(tmpdir(), 'ws-docker-gw-'));
const owner = `ws-test-${generateId().slice(0, 8)}`;

afterAll(async () => {
  await removeOwnedContainers(owner).catch(() => []);
  rmSync(base, { recursive: true, force: true });
}, 120_000);

const SERVER = `let b='';process.stdin.on('data',c=>{b+=c;let i;while((i=b.indexOf('\\n'))>=0){const m=JSON.parse(b.slice(0,i));b=b.slice(i+1);
if(m.id===undefined)continue;let r={};if(m.method==='initialize')r={protocolVersion:m.params.protocolVersion,capabilities:{tools:{}},serverInfo:{name:'d',version:'1'}};
else if(m.method==='tools/list')r={tools:[{name:'host',inputSchema:{type:'object'}}]};else if(m.method==='tools/call')r={content:[{type:'text',text:require('os').hostname()}]};
process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:m.id,result:r})+'\\n');}});`;

describe.skipIf(problem !== undefined)('docker gateway channels', () => {
  for (const gatewayChannel of ['unix', 'relay'] as const) {
    it(`runs commands, files and MCP through the ${gatewayChannel} channel`, async () => {
      const workspaceId = `channel-${gatewayChannel}-${generateId().slice(0, 6)}`;
      const workspace = await DockerWorkspace.open({
        image,
        owner,
        workspaceId,
        hostWorkdir: join(base, workspaceId),
        gatewayChannel,
      });
      try {
        const sandbox = workspace.getSandbox();
        expect((await sandbox.exec(['sh', '-c', 'echo $((20 + 22))'])).stdoutText).toBe('42\n');
        await sandbox.writeFile('server.js', SERVER);
        await workspace.addMcp({
          name: 'inside',
          transport: { type: 'stdio', command: 'node', args: ['server.js'] },
        });
        const [client] = await workspace.listMcps();
        const hostname = (await client!.callTool('host', {})).content[0];
        expect(hostname).toMatchObject({ type: 'text' });
        // The MCP server runs in the container, whose hostname is its short id, not the host's.
        const containerId = (await docker.getContainer(workspace.containerName).inspect()).Id;
        expect(containerId.startsWith((hostname as { text: string }).text)).toBe(true);
      } finally {
        await workspace.destroy();
      }
    }, 120_000);
  }

  it("cuts the sandbox off the network with network: 'none', and MCP still works", async () => {
    const workspaceId = `offline-${generateId().slice(0, 6)}`;
    const workspace = await DockerWorkspace.open({ image, owner, workspaceId, network: 'none' });
    try {
      const sandbox = workspace.getSandbox();
      // Only the loopback interface is there.
      const interfaces = (
        await sandbox.exec(['sh', '-c', "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"])
      ).stdoutText
        .trim()
        .split('\n');
      expect(interfaces).toEqual(['lo']);
      await sandbox.writeFile('server.js', SERVER);
      await workspace.addMcp({
        name: 'offline',
        transport: { type: 'stdio', command: 'node', args: ['server.js'] },
      });
      const [client] = await workspace.listMcps();
      expect((await client!.callTool('host', {})).content[0]).toMatchObject({ type: 'text' });
    } finally {
      await workspace.destroy();
    }
  }, 120_000);

  it('refuses a TCP channel: the gateway listens on a socket or loopback only', async () => {
    let failure: unknown;
    try {
      new DockerWorkspace({ image, owner, gatewayChannel: 'tcp' as never });
    } catch (error) {
      failure = error;
    }
    expect(isWsError(failure, 'INVALID_ARGUMENT'), String(failure)).toBe(true);
    expect(String((failure as Error).message)).toContain("'unix'");
  });

  it('reads files of a stopped container through the archive API, and refuses to write there without a change', async () => {
    const workspaceId = `stopped-${generateId().slice(0, 6)}`;
    const workspace = await DockerWorkspace.open({ image, owner, workspaceId, gateway: false });
    try {
      await workspace.getSandbox().writeFile('deep/er/file.bin', Uint8Array.from([0, 1, 2, 255]));
      const container = docker.getContainer(workspace.containerName);
      await container.stop({ t: 0 });
      const direct = new DockerSandbox(container, workspace.containerName, {});
      expect([...(await direct.readFile('/workspace/deep/er/file.bin'))]).toEqual([0, 1, 2, 255]);
      // A write is renamed into place by a command, which a stopped container cannot run: it fails
      // before a byte is written.
      const refused = await direct
        .writeFile('/workspace/deep/er/file.bin', 'while stopped')
        .catch((error: unknown) => error);
      expect(isWsError(refused, 'BACKEND_UNAVAILABLE'), String(refused)).toBe(true);
      expect(
        isWsError(await direct.readFile('/workspace/nope').catch((error: unknown) => error), 'NOT_FOUND'),
      ).toBe(true);
      await container.start();
      expect([...(await direct.readFile('/workspace/deep/er/file.bin'))]).toEqual([0, 1, 2, 255]);
      expect((await direct.exec(['ls', '-A', '/workspace/deep/er'])).stdoutText).toBe('file.bin\n');
    } finally {
      await workspace.destroy();
    }
  }, 120_000);

  it('keeps file calls working after a reader stops a large archive read early', async () => {
    const workspaceId = `early-stop-${generateId().slice(0, 6)}`;
    const workspace = await DockerWorkspace.open({ image, owner, workspaceId, gateway: false });
    try {
      const sandbox = workspace.getSandbox();
      const lines = Array.from({ length: 400_000 }, (_, index) => `line ${index}`).join('\n');
      await sandbox.writeFile('big.txt', lines);
      const read = (await workspace.listTools()).find((tool) => tool.name === 'Read');
      const result = await read?.call({ file_path: '/workspace/big.txt', limit: 3 });
      expect(result?.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('line 2') });
      for await (const chunk of await sandbox.readStream('big.txt')) {
        expect(chunk.byteLength).toBeGreaterThan(0);
        break;
      }
      // The engine serialises archive calls per container: these would wait forever behind an open,
      // unread response.
      const settled = await Promise.race([
        (async () => {
          await sandbox.writeFile('after.txt', 'still works');
          return (await sandbox.stat('big.txt')).size;
        })(),
        new Promise((resolve) => setTimeout(() => resolve('stuck'), 20_000)),
      ]);
      expect(settled).toBe(lines.length);
    } finally {
      await workspace.destroy();
    }
  }, 120_000);
});

/**
 * The node-less image with the C++ runtime removed too, so that the host's node cannot run in it
 * either; removed after the file.
 */
async function imageWithoutCxxRuntime(): Promise<string> {
  const tag = `ws-test-no-cxx:${owner}`;
  const container = await docker.createContainer({
    Image: bare,
    Cmd: ['sh', '-c', 'rm -f /usr/lib/*-linux-gnu/libstdc++.so.6*'],
    Labels: { 'ws.test.owner': owner },
  });
  try {
    await container.start();
    await container.wait();
    await container.commit({ repo: 'ws-test-no-cxx', tag: owner });
  } finally {
    await container.remove({ force: true });
  }
  return tag;
}

describe.skipIf(bareProblem !== undefined)('docker on an image without node or ripgrep', () => {
  let noCxx: string | undefined;
  afterAll(async () => {
    if (noCxx)
      await docker
        .getImage(noCxx)
        .remove({ force: true })
        .catch(() => {});
  });

  it("brings the host's node for the gateway: MCP works, the node bound read-only beside the bundle", async () => {
    const workspaceId = `bare-node-${generateId().slice(0, 6)}`;
    const workspace = await DockerWorkspace.open({ image: bare, owner, workspaceId });
    try {
      expect(workspace.capabilities.mcp, JSON.stringify(workspace.warnings)).toBe(true);
      const sandbox = workspace.getSandbox();
      const placed = `/opt/ws/node-${process.version}-linux-${process.arch}`;
      expect((await sandbox.exec([placed, '-p', 'process.version'])).stdoutText.trim()).toBe(process.version);
      // Read-only inside: the container cannot replace the node other containers run.
      const write = await sandbox.exec(['sh', '-c', `echo x > ${placed}`]);
      expect(write.exitCode).not.toBe(0);
    } finally {
      await workspace.destroy();
    }
  }, 180_000);

  it('runs commands and every built-in tool where no node can run, and says why MCP is unsupported', async () => {
    noCxx = await imageWithoutCxxRuntime();
    const workspace = await DockerWorkspace.open({
      image: noCxx,
      owner,
      workspaceId: `bare-${generateId().slice(0, 6)}`,
    });
    try {
      expect(workspace.capabilities.mcp).toBe(false);
      expect(workspace.warnings.join('\n')).toMatch(/libstdc\+\+/);
      const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
      expect((await tools.Bash!.call({ command: 'command -v node rg || echo none' })).content).toEqual([
        { type: 'text', text: 'none\n' },
      ]);
      expect(
        (await tools.Write!.call({ file_path: '/workspace/src/app.ts', content: 'const answer = 41;\n' }))
          .isError,
      ).toBe(false);
      expect((await tools.Read!.call({ file_path: '/workspace/src/app.ts' })).isError).toBe(false);
      expect(
        (await tools.Edit!.call({ file_path: '/workspace/src/app.ts', old_string: '41', new_string: '42' }))
          .isError,
      ).toBe(false);
      expect((await tools.Glob!.call({ pattern: '**/*.ts' })).content).toEqual([
        { type: 'text', text: '/workspace/src/app.ts' },
      ]);
      expect((await tools.Grep!.call({ pattern: 'answer = 4\\d', output_mode: 'content' })).content).toEqual([
        { type: 'text', text: '/workspace/src/app.ts:1:const answer = 42;' },
      ]);
      const failure = await workspace
        .addMcp({ name: 'x', transport: { type: 'stdio', command: 'node' } })
        .catch((error: unknown) => error);
      expect(isWsError(failure, 'CAPABILITY_UNSUPPORTED')).toBe(true);
      // The error says why and what to do.
      expect((failure as Error).message).toMatch(
        /does not run there.*install node 18 or newer in the image/s,
      );
    } finally {
      await workspace.destroy();
    }
  }, 180_000);
});
