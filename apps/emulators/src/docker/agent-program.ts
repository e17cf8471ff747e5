/**
 * The program the emulators run inside a sandbox's container to start its commands, as the vendors'
 * own in-sandbox daemons (E2B's envd, Daytona's toolbox, OpenSandbox's execd) do. It runs as
 * `node -e` on the image's node, started once per container through the engine's exec, and then
 * starts every command of that container itself: a `docker exec` costs the engine a runtime start
 * (about 0.2 s of CPU here); a child of this program costs a fork.
 *
 * It runs as one user (the engine starts one per container and user: in a container without
 * capabilities, only the engine can switch users) and starts commands as that user.
 *
 * It reads and writes frames on the socket it is given (`node -e <program> <socket path> <token>`, the
 * emulator listening at the other end: see agent-socket.ts), or else on stdin and stdout: a 9-byte
 * header (type u8, id u32 BE, length u32 BE) and a payload of at most `MAX_PAYLOAD` bytes. Its hello
 * carries the token it was started with.
 *   host → agent: 1 start (JSON), 2 stdin bytes, 3 stdin end, 4 ack (u32: output bytes consumed),
 *                 5 detach (the host dropped the command: close its pipes)
 *   agent → host: 0 hello (JSON), 1 started (JSON pid), 6 failed (JSON message), 2 stdout, 3 stderr,
 *                 4 exit (JSON code), 5 stdin ack (u32: input bytes handed to the command)
 * Each direction of each command has a window: its output stops being read while more than `WINDOW`
 * bytes of it are unacknowledged by the host, and the host sends no more input while a window of it
 * is not yet handed to the command. So a slow reader on either side holds a bounded amount, stalls
 * only its own command (as with an engine's exec stream), and the frames of the others go on.
 *
 * The function is serialised with `toString()`: it refers to nothing outside itself (not even
 * `require`, which bundlers rewrite) and uses only what Node.js 18 has.
 */
export function agentProgram(): void {
  // `node -e` puts `require` on the global object; read it from there, so no bundler rewrites it.
  const load = (globalThis as unknown as { require: NodeJS.Require }).require;
  const { spawn } = load('node:child_process') as typeof import('node:child_process');
  const fs = load('node:fs') as typeof import('node:fs');
  const os = load('node:os') as typeof import('node:os');
  const net = load('node:net') as typeof import('node:net');
  const MAX_PAYLOAD = 1 << 20;
  // `node -e <program> <socket> <token>`: the socket to talk over, else stdin and stdout.
  const [socketPath, token] = process.argv.slice(1);
  const socket = socketPath ? net.connect(socketPath) : undefined;
  const input: NodeJS.ReadableStream = socket ?? process.stdin;
  const output: NodeJS.WritableStream = socket ?? process.stdout;
  const WINDOW = 1 << 20;

  interface Start {
    argv: string[];
    env: string[];
    cwd: string;
    stdin: boolean;
  }
  interface Running {
    child: import('node:child_process').ChildProcess;
    unacked: number;
    paused: boolean;
    detached: boolean;
  }
  const running = new Map<number, Running>();

  const send = (type: number, id: number, payload: Buffer) => {
    for (let offset = 0; offset < payload.length || offset === 0; offset += MAX_PAYLOAD) {
      const part = payload.subarray(offset, offset + MAX_PAYLOAD);
      const header = Buffer.alloc(9);
      header.writeUInt8(type, 0);
      header.writeUInt32BE(id, 1);
      header.writeUInt32BE(part.length, 5);
      output.write(Buffer.concat([header, part]));
      if (payload.length === 0) break;
    }
  };
  const sendJson = (type: number, id: number, value: unknown) =>
    send(type, id, Buffer.from(JSON.stringify(value)));

  const sendAck = (id: number, bytes: number) => {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(bytes, 0);
    send(5, id, payload);
  };

  const signalCode = (signal: string | null) => {
    const numbers = os.constants.signals as Record<string, number>;
    return signal && numbers[signal] !== undefined ? 128 + (numbers[signal] as number) : 255;
  };

  const start = (id: number, request: Start) => {
    try {
      if (!fs.statSync(request.cwd).isDirectory()) throw new Error('not a directory');
    } catch (error) {
      const message = String((error as Error).message ?? error);
      sendJson(6, id, { message: `chdir to cwd (${JSON.stringify(request.cwd)}) failed: ${message}` });
      return;
    }
    const env: Record<string, string> = {};
    for (const pair of request.env) {
      const at = pair.indexOf('=');
      if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
    }
    // The engine sets HOME to the user's home when the image does not set it; this program runs as
    // that user (one per user), so it has the engine's HOME to hand on.
    if (env.HOME === undefined && process.env.HOME !== undefined) env.HOME = process.env.HOME;
    let child: import('node:child_process').ChildProcess;
    try {
      child = spawn(request.argv[0] as string, request.argv.slice(1), {
        cwd: request.cwd,
        env,
        detached: true,
        stdio: [request.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      sendJson(6, id, { message: String((error as Error).message ?? error) });
      return;
    }
    const entry: Running = { child, unacked: 0, paused: false, detached: false };
    running.set(id, entry);
    let failed = false;
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined || failed) return;
      failed = true;
      running.delete(id);
      const missing = error.code === 'ENOENT' || error.code === 'EACCES';
      sendJson(1, id, { pid: 0 });
      send(
        3,
        id,
        Buffer.from(
          `exec failed: unable to start container process: exec: ${JSON.stringify(request.argv[0])}: ${
            error.code === 'ENOENT' ? 'executable file not found in $PATH' : String(error.message)
          }\n`,
        ),
      );
      sendJson(4, id, { code: missing ? 127 : 126 });
    });
    if (child.pid === undefined) return;
    sendJson(1, id, { pid: child.pid });
    child.stdin?.on('error', () => {});
    const forward = (type: number) => (chunk: Buffer) => {
      if (entry.detached) return;
      send(type, id, chunk);
      entry.unacked += chunk.length;
      if (entry.unacked >= WINDOW && !entry.paused) {
        entry.paused = true;
        child.stdout?.pause();
        child.stderr?.pause();
      }
    };
    child.stdout?.on('data', forward(2));
    child.stderr?.on('data', forward(3));
    child.on('close', (code: number | null, signal: string | null) => {
      running.delete(id);
      sendJson(4, id, { code: code ?? signalCode(signal) });
    });
  };

  const onFrame = (type: number, id: number, payload: Buffer) => {
    const entry = running.get(id);
    switch (type) {
      case 1:
        start(id, JSON.parse(payload.toString('utf8')) as Start);
        return;
      case 2: {
        // Each command's input is acknowledged once handed to its pipe: the host keeps at most a
        // window of it unacknowledged, so one slow reader never holds up the other commands' frames.
        const stdin = entry?.child.stdin;
        const length = payload.length;
        if (!stdin || stdin.destroyed) {
          sendAck(id, length);
          return;
        }
        stdin.write(payload, () => sendAck(id, length));
        return;
      }
      case 3:
        entry?.child.stdin?.end();
        return;
      case 4:
        if (!entry) return;
        entry.unacked = Math.max(0, entry.unacked - payload.readUInt32BE(0));
        if (entry.paused && entry.unacked < WINDOW / 2) {
          entry.paused = false;
          entry.child.stdout?.resume();
          entry.child.stderr?.resume();
        }
        return;
      case 5:
        // The host dropped the command's connection: like the engine, close all its pipes.
        if (!entry) return;
        entry.detached = true;
        entry.child.stdin?.destroy();
        entry.child.stdout?.destroy();
        entry.child.stderr?.destroy();
        return;
    }
  };

  let pending: Buffer = Buffer.alloc(0);
  input.on('data', (chunk: Buffer) => {
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 9) {
      const length = pending.readUInt32BE(5);
      if (length > MAX_PAYLOAD) process.exit(2);
      if (pending.length < 9 + length) break;
      const type = pending.readUInt8(0);
      const id = pending.readUInt32BE(1);
      const payload = pending.subarray(9, 9 + length);
      pending = pending.subarray(9 + length);
      onFrame(type, id, payload);
    }
  });
  // The host went away: the commands go on (as after an engine exec's connection closes).
  input.on('end', () => process.exit(0));
  input.on('close', () => process.exit(0));
  output.on('error', () => process.exit(0));
  sendJson(0, 0, { pid: process.pid, ...(token ? { token } : {}) });
}
