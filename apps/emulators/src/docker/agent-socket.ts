import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmdirSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The socket channel of a container's agent (see agent.ts): a folder of the host, mounted read-only
 * into the container at `AGENT_MOUNT`, in which the emulator listens for the agent it starts. The
 * agent's frames then go from its process straight to the emulator's, instead of through the
 * engine's exec stream (the runtime's shim and the engine copy every byte of that one, which costs
 * more CPU than the command and the vendor protocol together on a busy transfer).
 *
 * The sandbox cannot write the folder (read-only), so nothing in it is the sandbox's: no link to
 * follow, no name to take first. Any process of the sandbox can connect to the socket while it
 * listens, so the agent proves itself with a token it is started with, and the socket is removed as
 * soon as it has; one that connects without the token is dropped. A container without the folder (one
 * created elsewhere, or whose folder is gone) keeps the engine's exec stream.
 */

/** Where the folder is mounted in every container the emulators create. */
export const AGENT_MOUNT = '/run/ws-emulator-agent';

/** How long an empty folder may wait for its container's first command before a sweep removes it. */
const UNUSED_FOLDER_MS = 60 * 60 * 1000;
const MAX_HELLO_BYTES = 4096;

/** The folder that holds one folder per container, this user's only. */
function root(): string | undefined {
  const path = join(tmpdir(), `ws-emulator-agents-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  // Someone else's folder, or a link planted in its place, is not used.
  const stat = lstatSync(path);
  if (!stat.isDirectory() || stat.uid !== (process.getuid?.() ?? stat.uid) || (stat.mode & 0o077) !== 0)
    return undefined;
  return path;
}

/**
 * The folders this process made, removed (when empty) at exit: one whose agent never connected, and
 * one the engine made again when its container restarted. A container that comes back later gets
 * its folder made again by the engine.
 */
const made = new Set<string>();
let cleanupArmed = false;

function removeAtExit(folder: string): void {
  made.add(folder);
  if (cleanupArmed) return;
  cleanupArmed = true;
  process.once('exit', () => {
    for (const path of made) {
      try {
        rmdirSync(path);
      } catch {}
    }
  });
}

/** Removes the empty folders no command has used for a while (their containers are gone, or idle). */
function sweep(parent: string): void {
  const now = Date.now();
  for (const name of readdirSync(parent)) {
    const path = join(parent, name);
    try {
      if (now - statSync(path).mtimeMs > UNUSED_FOLDER_MS) rmdirSync(path);
    } catch {}
  }
}

/**
 * A `HostConfig.Binds` entry that gives a new container its agent folder (a new, empty folder of the
 * host, read-only inside); undefined when there is no folder to give (the container then keeps the
 * engine's exec stream). The engine makes the folder again if it is gone when the container restarts.
 */
export function agentBind(): string | undefined {
  if (process.env.WS_EMULATOR_AGENT_SOCKET === '0') return undefined;
  try {
    const parent = root();
    if (!parent) return undefined;
    sweep(parent);
    const folder = mkdtempSync(join(parent, 'c-'));
    // Searchable by the container's users (the agent may run as any of them); nothing else is in it.
    chmodSync(folder, 0o755);
    removeAtExit(folder);
    return `${folder}:${AGENT_MOUNT}:ro`;
  } catch {
    return undefined;
  }
}

/** A socket the agent is about to connect to: its name in the folder, the token it must say. */
export interface AgentListener {
  /** The socket's path as the container sees it. */
  readonly path: string;
  /** What the agent's hello must carry. */
  readonly token: string;
  /**
   * The agent's connection, paused, with what it sent so far (its hello first); rejects after
   * `timeoutMs`. Call once.
   */
  accepted(timeoutMs: number): Promise<{ socket: Socket; rest: Buffer }>;
  /** Stops listening and removes the socket (and the folder, once empty). Idempotent. */
  close(): void;
}

/**
 * Listens in `folder` (the host side of the container's `AGENT_MOUNT`) for the agent about to be
 * started; undefined when the folder is not there or cannot hold a socket.
 */
export async function listenForAgent(folder: string): Promise<AgentListener | undefined> {
  try {
    const stat = lstatSync(folder);
    if (!stat.isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  const name = `${randomBytes(12).toString('hex')}.sock`;
  const hostPath = join(folder, name);
  const token = randomBytes(24).toString('hex');
  const server: Server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(hostPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The agent may run as any user of the container.
    chmodSync(hostPath, 0o666);
  } catch {
    server.close();
    return undefined;
  }
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  // Connections still saying who they are: dropped when the agent has connected or never will.
  const unproven = new Set<Socket>();
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    server.close();
    for (const socket of unproven) socket.destroy();
    unproven.clear();
    try {
      unlinkSync(hostPath);
    } catch {}
    try {
      rmdirSync(folder);
    } catch {}
  };
  const accepted = (timeoutMs: number) =>
    new Promise<{ socket: Socket; rest: Buffer }>((resolve, reject) => {
      timer = setTimeout(() => {
        close();
        reject(new Error('the sandbox agent did not connect'));
      }, timeoutMs);
      timer.unref();
      server.on('connection', (socket) => {
        if (closed) return void socket.destroy();
        unproven.add(socket);
        let pending = Buffer.alloc(0);
        const drop = () => {
          unproven.delete(socket);
          socket.destroy();
        };
        socket.on('error', drop);
        const onData = (chunk: Buffer) => {
          pending = Buffer.concat([pending, chunk]);
          if (pending.length > MAX_HELLO_BYTES) return drop();
          if (pending.length < 9) return;
          const length = pending.readUInt32BE(5);
          if (pending.readUInt8(0) !== 0 || length > MAX_HELLO_BYTES) return drop();
          if (pending.length < 9 + length) return;
          let hello: { token?: unknown };
          try {
            hello = JSON.parse(pending.subarray(9, 9 + length).toString('utf8')) as { token?: unknown };
          } catch {
            return drop();
          }
          if (hello.token !== token || closed) return drop();
          // Held until the agent's reader takes over (it resumes the socket), so no byte is lost.
          socket.pause();
          socket.off('data', onData);
          socket.off('error', drop);
          unproven.delete(socket);
          clearTimeout(timer);
          close();
          // The hello stays in front: the agent's reader takes it as the first frame.
          resolve({ socket, rest: pending });
        };
        socket.on('data', onData);
      });
    });
  return { path: `${AGENT_MOUNT}/${name}`, token, accepted, close };
}

/** What a new container's `HostConfig` adds for its agent folder (nothing when there is none to give). */
export function agentHostConfig(): { Binds?: string[] } {
  const bind = agentBind();
  return bind ? { Binds: [bind] } : {};
}
