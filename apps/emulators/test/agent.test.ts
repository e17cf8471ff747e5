import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireEngine } from '@ws/contract-tests';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MOUNT, agentHostConfig, listenForAgent } from '../src/docker/agent-socket.js';
import {
  execExitCode,
  pauseContainer,
  runExec,
  startExec,
  streamDone,
  streamStdout,
  unpauseContainer,
} from '../src/docker/exec.js';
import { dockerProblem } from './engine-check.js';

// The in-container agent the emulators start their commands through, against real containers: it
// must answer exactly as the engine's exec does, and hand every case it cannot serve to the engine.
const image = 'ws-workspace:bookworm';
const bare = 'ws-workspace:bookworm-bare';
const problem = requireEngine('docker', await dockerProblem(image));
if (problem) console.warn(`[agent] skipped: ${problem}`);

const docker = new Docker();
const created: Docker.Container[] = [];

/** A running container; with `socket`, it has the agent folder the emulators give their containers. */
async function container(socket: boolean, from = image): Promise<Docker.Container> {
  const made = await docker.createContainer({
    Image: from,
    Cmd: ['sleep', 'infinity'],
    Env: ['FROM_IMAGE=yes'],
    WorkingDir: '/srv',
    Labels: { 'ws.test': 'emulator-agent' },
    HostConfig: {
      ...(socket ? agentHostConfig() : {}),
      AutoRemove: false,
      CapDrop: ['ALL'],
      NetworkMode: 'none',
    },
  });
  created.push(made);
  await made.start();
  return made;
}

/** Processes whose command line shows the agent, in the container. */
async function agentsIn(target: Docker.Container): Promise<number> {
  const top = await target.top({ ps_args: '-eo pid,args' });
  return (top.Processes ?? []).filter((row: string[]) => (row[1] ?? '').startsWith('node -e ')).length;
}

afterAll(async () => {
  await Promise.all(created.map((made) => made.remove({ force: true }).catch(() => {})));
});

const text = (bytes: Buffer) => bytes.toString('utf8');

// The agent's two channels: a socket in the folder the emulators mount into their containers, and
// the engine exec's own stream (a container without that folder, or whose folder is gone).
describe.skipIf(problem !== undefined).each([
  ['over its socket', true],
  ['over the exec stream', false],
])('the in-container agent, %s', (_, socket) => {
  let box: Docker.Container;

  beforeAll(async () => {
    if (problem) return;
    box = await container(socket);
  }, 60_000);

  it('runs commands with the image env, the working dir, exit codes and stdin as the engine does', async () => {
    const env = await runExec(box, ['sh', '-c', 'echo "$FROM_IMAGE $EXTRA $HOME $(pwd)"; exit 3'], {
      env: ['EXTRA=a b'],
    });
    expect(env.exitCode).toBe(3);
    expect(text(env.stdout)).toBe('yes a b /root /srv\n');
    expect(await agentsIn(box)).toBe(1);

    const echo = await runExec(box, ['sh', '-c', 'cat; echo err >&2'], { input: Buffer.from('in\n') });
    expect([echo.exitCode, text(echo.stdout), text(echo.stderr)]).toEqual([0, 'in\n', 'err\n']);

    const killed = await runExec(box, ['sh', '-c', 'kill -KILL $$']);
    expect(killed.exitCode).toBe(137);

    // Each command leads its own session and process group, as an engine exec does.
    const session = await runExec(box, ['sh', '-c', 'ps -o pid=,pgid=,sid= -p $$']);
    const [pid, pgid, sid] = text(session.stdout).trim().split(/\s+/);
    expect([pgid, sid]).toEqual([pid, pid]);
  });

  it('runs as the user asked for, with their home; an unknown user fails as with the engine', async () => {
    const nobody = await runExec(box, ['sh', '-c', 'id -u; id -g; echo "$HOME"'], { user: 'nobody' });
    expect(text(nobody.stdout)).toBe('65534\n65534\n/nonexistent\n');
    const numeric = await runExec(box, ['id', '-u'], { user: '4242' });
    expect(text(numeric.stdout)).toBe('4242\n');
    const unknown = await runExec(box, ['true'], { user: 'no-such-user' });
    expect(unknown.exitCode).toBe(126);
    expect(text(unknown.stdout)).toMatch(/unable to find user no-such-user/);
  });

  it('reports a missing command as exit 127, and a missing working dir as a failed start', async () => {
    const missing = await runExec(box, ['no-such-command']);
    expect(missing.exitCode).toBe(127);
    expect(text(missing.stderr)).toMatch(/executable file not found/);
    await expect(startExec(box, ['true'], { workingDir: '/no/such/dir' })).rejects.toThrow(/chdir/);
  });

  it('passes 64 MiB each way with bounded buffering when the reader is slow', async () => {
    const size = 64 << 20;
    const { chunks, finished } = await streamStdout(box, ['head', '-c', String(size), '/dev/zero']);
    let received = 0;
    for await (const chunk of chunks) {
      received += chunk.length;
      if (received < 4 << 20) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(received).toBe(size);
    expect((await finished).exitCode).toBe(0);

    async function* upload() {
      for (let sent = 0; sent < size; sent += 1 << 20) yield Buffer.alloc(1 << 20, 7);
    }
    const counted = await runExec(box, ['sh', '-c', 'wc -c'], { input: upload() });
    expect(text(counted.stdout).trim()).toBe(String(size));
  });

  it('streams input and output of one command at once (a pipe through cat) without stalling', async () => {
    const size = 32 << 20;
    async function* upload() {
      for (let sent = 0; sent < size; sent += 1 << 20) yield Buffer.alloc(1 << 20, 9);
    }
    const echoed = await runExec(box, ['cat'], { input: upload() });
    expect(echoed.exitCode).toBe(0);
    expect(echoed.stdout.length).toBe(size);
  });

  it('ends a command whose reader stopped early, and keeps serving the others', async () => {
    const { stream, exec } = await startExec(box, ['sh', '-c', 'yes']);
    const first = new Promise<void>((resolve) => stream.once('data', () => resolve()));
    await first;
    stream.destroy();
    for (let i = 0; i < 100 && (await exec.inspect()).Running; i++)
      await new Promise((r) => setTimeout(r, 50));
    expect((await exec.inspect()).Running).toBe(false);
    expect((await runExec(box, ['echo', 'still'])).stdout.toString()).toBe('still\n');
  });

  it('sends commands to the engine while the container is paused, which refuses them', async () => {
    await pauseContainer(box);
    try {
      await expect(runExec(box, ['true'])).rejects.toThrow(/paused/i);
    } finally {
      await unpauseContainer(box);
    }
    expect((await runExec(box, ['true'])).exitCode).toBe(0);
  });

  it('is replaced when the sandbox kills it, ending the commands it had started', async () => {
    const { stream, exec } = await startExec(box, ['sleep', '300']);
    stream.resume();
    const agents = await agentsIn(box);
    // The command that kills it ends with it, its exit status unknown (-1), as does the sleep.
    expect((await runExec(box, ['sh', '-c', 'pkill -KILL -f "^node -e"; sleep 5'])).exitCode).toBe(-1);
    await streamDone(stream);
    expect(await execExitCode(exec)).toBe(-1);
    const after = await runExec(box, ['echo', 'again']);
    expect(text(after.stdout)).toBe('again\n');
    expect(await agentsIn(box)).toBe(agents);
  });

  it('leaves an image without node to the engine', async () => {
    const plain = await container(socket, bare).catch(() => undefined);
    if (!plain) return;
    const result = await runExec(plain, ['sh', '-c', 'echo plain; exit 4']);
    expect([result.exitCode, text(result.stdout)]).toEqual([4, 'plain\n']);
    expect(await agentsIn(plain)).toBe(0);
  });
});

describe.skipIf(problem !== undefined)('the agent socket', () => {
  it('is in a folder the sandbox cannot write, gone once the agent is in; the agent talks over it', async () => {
    const box = await container(true);
    const mount = (await box.inspect()).Mounts.find((entry) => entry.Destination === AGENT_MOUNT);
    expect(mount?.RW).toBe(false);
    expect(text((await runExec(box, ['echo', 'in'])).stdout)).toBe('in\n');
    const top = await box.top({ ps_args: '-eo pid,args' });
    const agent = (top.Processes ?? [])
      .map((row: string[]) => row[1] ?? '')
      .find((args: string) => args.startsWith('node -e '));
    expect(agent).toContain(`${AGENT_MOUNT}/`);
    // Its folder is removed from the host once the agent has connected: nothing is left to reuse.
    expect(existsSync(mount!.Source)).toBe(false);
    const write = await runExec(box, ['sh', '-c', `touch ${AGENT_MOUNT}/planted; ln -s / ${AGENT_MOUNT}/up`]);
    expect(write.exitCode).not.toBe(0);
    expect(text(write.stderr)).toMatch(/cannot touch/);
    expect(text((await runExec(box, ['ls', '-A', AGENT_MOUNT])).stdout)).toBe('');
  });
});

describe('listenForAgent', () => {
  const hello = (value: unknown) => {
    const payload = Buffer.from(JSON.stringify(value));
    const header = Buffer.alloc(9);
    header.writeUInt32BE(payload.length, 5);
    return Buffer.concat([header, payload]);
  };
  const closedBy = (socket: Socket) => new Promise<void>((resolve) => socket.on('close', () => resolve()));

  it('takes the connection that says its token, drops the others, and removes its socket', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'ws-agent-socket-'));
    try {
      const listener = (await listenForAgent(folder))!;
      const hostPath = join(folder, listener.path.slice(AGENT_MOUNT.length + 1));
      const acceptance = listener.accepted(10_000);
      // A stranger with the wrong token, one with garbage, and one that says too much are dropped.
      for (const bytes of [
        hello({ token: 'guess' }),
        Buffer.from('GET / HTTP/1.1\r\n\r\n'),
        Buffer.alloc(8192, 1),
      ]) {
        const stranger = connect(hostPath);
        stranger.on('error', () => {});
        stranger.write(bytes);
        await closedBy(stranger);
      }
      const agent = connect(hostPath);
      agent.write(Buffer.concat([hello({ pid: 1, token: listener.token }), Buffer.from('after')]));
      const { socket, rest } = await acceptance;
      const more = new Promise<Buffer>((resolve) => socket.once('data', resolve));
      socket.resume();
      agent.write('later');
      expect(rest.subarray(rest.length - 5).toString()).toBe('after');
      expect((await more).toString()).toBe('later');
      expect(existsSync(hostPath)).toBe(false);
      expect(existsSync(folder)).toBe(false);
      socket.destroy();
      agent.destroy();
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('refuses a folder that is a link', async () => {
    const base = mkdtempSync(join(tmpdir(), 'ws-agent-socket-'));
    try {
      symlinkSync(tmpdir(), join(base, 'link'));
      expect(await listenForAgent(join(base, 'link'))).toBeUndefined();
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
