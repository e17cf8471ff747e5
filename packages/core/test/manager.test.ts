import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Provider,
  type ProviderSession,
  runHostCommand,
  WorkspaceEngine,
  type WorkspaceManagerEvents,
} from '../src/backend.js';
import {
  assignWorkspaceId,
  type CallOptions,
  type ExecOptions,
  type IsolationPolicy,
  isWsError,
  type Sandbox,
  WorkspaceManager,
  WsError,
} from '../src/index.js';
import { blake2bHex } from '../src/manager/blake2b.js';
import type { WorkspaceRequest } from '../src/manager/isolation.js';

const base = mkdtempSync(join(tmpdir(), 'ws-manager-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

/** A gate a test opens when it chooses: what makes one creation slow, without a clock. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/**
 * A host-folder provider (commands are real host processes in the workspace's folder) whose `open`
 * can be held at a gate, and that counts what it opened and closed.
 */
class HostProvider implements Provider {
  readonly backend = 'host-test';
  readonly description = 'host test';
  readonly persistent = true;
  readonly isolation = 'none' as const;
  readonly mcp = false;
  readonly expectedWorkdir: string;

  constructor(
    workspaceId: string,
    private readonly world: World,
  ) {
    this.expectedWorkdir = join(base, world.name, workspaceId);
  }

  async open(options: CallOptions & { workspaceId: string }): Promise<ProviderSession> {
    this.world.opened.push(options.workspaceId);
    await this.world.gates.get(options.workspaceId)?.promise;
    if (this.world.failing.has(options.workspaceId))
      throw new WsError('BACKEND_UNAVAILABLE', `no sandbox for ${options.workspaceId}`);
    const workdir = this.expectedWorkdir;
    mkdirSync(workdir, { recursive: true });
    const sandbox: Sandbox = {
      backend: 'host-test',
      workdir,
      capabilities: {
        stat: false,
        list: false,
        remove: false,
        mkdir: false,
        rename: false,
        readStream: false,
        writeStream: false,
        spawn: false,
      },
      exec: (argv: readonly string[], execOptions: ExecOptions = {}) =>
        runHostCommand(argv, {
          cwd: execOptions.cwd ?? workdir,
          env: process.env,
          signal: execOptions.signal,
          timeoutMs: execOptions.timeoutMs,
          stdin: execOptions.stdin,
          onStdout: execOptions.onStdout,
          onStderr: execOptions.onStderr,
          maxOutputBytes: execOptions.maxOutputBytes,
        }),
      async readFile(path: string) {
        return readFileSync(join(workdir, path));
      },
      async writeFile(path: string, data: Uint8Array | string) {
        mkdirSync(dirname(join(workdir, path)), { recursive: true });
        writeFileSync(join(workdir, path), data);
      },
    };
    return { sandbox, workdir };
  }

  async close(): Promise<void> {
    this.world.closed.push(this.expectedWorkdir.split('/').pop() as string);
  }

  async destroy(): Promise<void> {}
}

interface World {
  name: string;
  opened: string[];
  closed: string[];
  gates: Map<string, { promise: Promise<void>; open: () => void }>;
  failing: Set<string>;
}

let worlds = 0;
function world(): World {
  return { name: `w${worlds++}`, opened: [], closed: [], gates: new Map(), failing: new Set() };
}

function managerOf(
  place: World,
  options: Omit<ConstructorParameters<typeof WorkspaceManager>[0], 'factory'> = {},
): WorkspaceManager<WorkspaceEngine> {
  return new WorkspaceManager({
    factory: (workspaceId) =>
      new WorkspaceEngine({ workspaceId, provider: new HostProvider(workspaceId, place) }),
    ...options,
  });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Whether a promise has settled, after every pending callback has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

function record<K extends keyof WorkspaceManagerEvents<WorkspaceEngine>>(
  manager: WorkspaceManager<WorkspaceEngine>,
  name: K,
): WorkspaceManagerEvents<WorkspaceEngine>[K][] {
  const events: WorkspaceManagerEvents<WorkspaceEngine>[K][] = [];
  manager.on(name, (event) => events.push(event));
  return events;
}

describe('workspace ids', () => {
  it('derives per-agent and per-user ids from the JSON of the policy and inputs (BLAKE2b, 16-byte digest)', () => {
    // Expected values from Python: hashlib.blake2b(json.dumps(['ws', policy, *inputs],
    // separators=(',', ':'), ensure_ascii=False).encode(), digest_size=16).hexdigest().
    expect(assignWorkspaceId({ userId: 'u1', agentId: 'coder' })).toBe('73893753d02401f19bba128900e6dc14');
    expect(assignWorkspaceId({ userId: 'u2', agentId: 'coder' }, 'per_agent')).toBe(
      'a2e368567f276f04db6fc61280f074a0',
    );
    expect(assignWorkspaceId({ userId: '', agentId: '' }, 'per_agent')).toBe(
      '85884002d35db92a0effde6750325910',
    );
    expect(assignWorkspaceId({ userId: 'u1', agentId: 'other' }, 'per_user')).toBe(
      'd7405a519596fff5822ebbcb4d528447',
    );
    expect(assignWorkspaceId({ userId: 'ü', agentId: '日本"q' })).toBe('6af53750f05e20d02d06f34b4ae945a7');
    expect(blake2bHex('a::b', 8)).toBe('2b26fb894dfd3a8b');
    expect(blake2bHex('ü::日本', 8)).toBe('56aeacee89142bdb');
    expect(blake2bHex('x'.repeat(128), 8)).toBe('901ce374e8e12402');
    expect(blake2bHex('x'.repeat(129), 8)).toBe('18de14b9d8eea5a3');
    expect(blake2bHex('x'.repeat(256), 16)).toBe('0b2c2b0de02938ad7a728b51e8da3357');
    expect(blake2bHex('', 64)).toBe(
      '786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce',
    );
  });

  it('never derives one id for two different requests', () => {
    // Each pair shared an id under AgentScope's "<userId>::<agentId>" and "user::<userId>".
    const pairs: [WorkspaceRequest, IsolationPolicy, WorkspaceRequest, IsolationPolicy][] = [
      [{ userId: 'a::b', agentId: 'c' }, 'per_agent', { userId: 'a', agentId: 'b::c' }, 'per_agent'],
      [{ userId: 'a:', agentId: ':b' }, 'per_agent', { userId: 'a', agentId: '::b' }, 'per_agent'],
      [{ userId: 'user', agentId: 'x' }, 'per_agent', { userId: 'x' }, 'per_user'],
      [{ userId: '\ud800', agentId: 'a' }, 'per_agent', { userId: '\ufffd', agentId: 'a' }, 'per_agent'],
      [{ userId: '\udc00x', agentId: 'a' }, 'per_agent', { userId: '\ufffdx', agentId: 'a' }, 'per_agent'],
      [{ userId: '"', agentId: '' }, 'per_agent', { userId: '', agentId: '"' }, 'per_agent'],
    ];
    for (const [one, onePolicy, other, otherPolicy] of pairs)
      expect(assignWorkspaceId(one, onePolicy), JSON.stringify([one, other])).not.toBe(
        assignWorkspaceId(other, otherPolicy),
      );
    // And over many inputs built from the characters that separate, quote and escape.
    const alphabet = ['', ':', '::', 'a', '"', '\\', ',', '[', '\ud800', '\ufffd'];
    const seen = new Map<string, string>();
    for (const userId of alphabet)
      for (const agentId of alphabet)
        for (const [request, policy] of [
          [{ userId, agentId }, 'per_agent'],
          [{ userId: userId + agentId }, 'per_user'],
        ] as const) {
          const key = JSON.stringify([policy, request.userId, 'agentId' in request ? request.agentId : null]);
          const id = assignWorkspaceId(request, policy);
          const earlier = seen.get(id);
          if (earlier !== undefined && earlier !== key)
            expect.fail(`${earlier} and ${key} both derive ${id}`);
          seen.set(id, key);
        }
    expect(seen.size).toBeGreaterThan(100);
  });

  it('gives a fresh id per session, lets an explicit id win, and refuses what it cannot derive from', () => {
    const first = assignWorkspaceId({ userId: 'u1', agentId: 'a' }, 'per_session');
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(assignWorkspaceId({ userId: 'u1', agentId: 'a' }, 'per_session')).not.toBe(first);
    expect(assignWorkspaceId({ workspaceId: 'mine', userId: 'u1', agentId: 'a' }, 'per_agent')).toBe('mine');
    for (const [request, policy] of [
      [{ agentId: 'a' }, 'per_agent'],
      [{ userId: 'u' }, 'per_agent'],
      [{ agentId: 'a' }, 'per_user'],
      [{ workspaceId: '../escape' }, 'per_agent'],
      [{ userId: 'u', agentId: 'a' }, 'per_tenant'],
    ] as const) {
      let thrown: unknown;
      try {
        assignWorkspaceId(request, policy as 'per_agent');
      } catch (error) {
        thrown = error;
      }
      expect(isWsError(thrown, 'INVALID_ARGUMENT'), JSON.stringify(request)).toBe(true);
    }
  });
});

describe('WorkspaceManager', () => {
  it('creates one workspace for concurrent callers of one id', async () => {
    const place = world();
    await using manager = managerOf(place);
    const opens = record(manager, 'open');
    const leases = await Promise.all(
      Array.from({ length: 50 }, () => manager.acquire({ userId: 'u1', agentId: 'coder' })),
    );
    expect(place.opened).toEqual(['73893753d02401f19bba128900e6dc14']);
    expect(opens.map((event) => event.workspaceId)).toEqual(['73893753d02401f19bba128900e6dc14']);
    expect(new Set(leases.map((lease) => lease.workspace)).size).toBe(1);
    expect(leases[0]?.workspace.state).toBe('ready');
    expect(manager.stats()).toMatchObject({ open: 1, leased: 1 });
  });

  it('does not make other ids wait for a slow creation', async () => {
    const place = world();
    const slow = gate();
    place.gates.set('slow', slow);
    await using manager = managerOf(place);
    const order: string[] = [];
    const slowLease = manager.acquire({ workspaceId: 'slow' }).then((lease) => {
      order.push('slow');
      return lease;
    });
    const others = await Promise.all(
      ['a', 'b', 'c'].map((workspaceId) =>
        manager.acquire({ workspaceId }).then((lease) => {
          order.push(workspaceId);
          return lease;
        }),
      ),
    );
    expect(others.map((lease) => lease.workspace.state)).toEqual(['ready', 'ready', 'ready']);
    expect(await settled(slowLease)).toBe(false);
    slow.open();
    await slowLease;
    expect(order.at(-1)).toBe('slow');
    expect(place.opened.filter((id) => id === 'slow')).toHaveLength(1);
  });

  it('holds callers beyond the cap in order and lets them in as leases are released', async () => {
    const place = world();
    await using manager = managerOf(place, { maxOpen: 2 });
    const first = await manager.acquire({ workspaceId: 'one' });
    const second = await manager.acquire({ workspaceId: 'two' });
    const order: string[] = [];
    const waiting = ['three', 'four', 'five'].map((workspaceId) =>
      manager.acquire({ workspaceId }).then((lease) => {
        order.push(workspaceId);
        return lease;
      }),
    );
    // A second caller of a queued id joins its place in the queue rather than taking another.
    const joining = manager.acquire({ workspaceId: 'four' });
    expect(await settled(Promise.race(waiting))).toBe(false);
    expect(manager.stats()).toMatchObject({ open: 2, queued: 3 });
    const evicted = record(manager, 'evict');

    first.release();
    const third = await waiting[0];
    expect(order).toEqual(['three']);
    expect(evicted.map((event) => [event.workspaceId, event.reason])).toEqual([['one', 'capacity']]);
    expect(place.closed).toEqual(['one']);

    await third?.[Symbol.asyncDispose]();
    await waiting[1];
    second.release();
    await waiting[2];
    expect(order).toEqual(['three', 'four', 'five']);
    expect((await joining).workspace).toBe((await waiting[1])?.workspace);
    expect(place.opened.filter((id) => id === 'four')).toHaveLength(1);
    expect(manager.stats().open).toBe(2);
  });

  it('never evicts a workspace while a stream handed out from it is being read', async () => {
    const place = world();
    await using manager = managerOf(place, { maxOpen: 1, acquireTimeoutMs: 5_000 });
    const reading = await manager.get({ workspaceId: 'reading' });
    const size = 4 * 1024 * 1024;
    await reading.getSandbox().writeFile('big.bin', new Uint8Array(size).fill(7));
    const stream = await reading.getSandbox().readStream('big.bin');
    const iterator = stream[Symbol.asyncIterator]();
    let received = (await iterator.next()).value?.byteLength ?? 0;
    // Nobody holds a lease and no call is running, but the stream is not read to its end.
    const error = await rejection(manager.acquire({ workspaceId: 'next', timeoutMs: 300 }));
    expect(isWsError(error, 'TIMEOUT'), String(error)).toBe(true);
    expect(reading.state).toBe('ready');
    for (;;) {
      const step = await iterator.next();
      if (step.done) break;
      received += step.value.byteLength;
    }
    expect(received).toBe(size);
    // Read to its end, it no longer holds the workspace: the next caller gets the slot.
    const next = await manager.acquire({ workspaceId: 'next' });
    expect(reading.state).toBe('closed');
    next.release();
    // A stream given up (break) lets the workspace go too.
    const again = await manager.get({ workspaceId: 'reading' });
    const chunks = await again.getSandbox().readStream('big.bin');
    expect(
      isWsError(await rejection(manager.acquire({ workspaceId: 'third', timeoutMs: 300 })), 'TIMEOUT'),
    ).toBe(true);
    for await (const _chunk of chunks) break;
    expect((await manager.acquire({ workspaceId: 'third', timeoutMs: 5_000 })).workspace.state).toBe('ready');
    expect(again.state).toBe('closed');
  });

  it('bounds the whole acquire: a creation that never settles ends the wait with TIMEOUT and is aborted', async () => {
    const place = world();
    const hung = gate();
    place.gates.set('hung', hung);
    const signals: AbortSignal[] = [];
    await using manager = new WorkspaceManager({
      factory: (workspaceId, options) => {
        if (options?.signal) signals.push(options.signal);
        return new WorkspaceEngine({ workspaceId, provider: new HostProvider(workspaceId, place) });
      },
      maxOpen: 2,
    });
    // The provider's open waits at the gate and ignores its signal: it would never settle.
    const first = manager.acquire({ workspaceId: 'hung', timeoutMs: 50 });
    const second = manager.acquire({ workspaceId: 'hung', timeoutMs: 200 });
    const error = await rejection(first);
    expect(isWsError(error, 'TIMEOUT'), String(error)).toBe(true);
    expect((error as WsError).message).toContain('was not created within 50 ms');
    // Another caller still waits for that creation: it goes on.
    expect(signals[0]?.aborted).toBe(false);
    expect(isWsError(await rejection(second), 'TIMEOUT')).toBe(true);
    // The last caller gave up: the creation is told to stop.
    expect(signals[0]?.aborted).toBe(true);
    // Other ids are served meanwhile.
    expect((await manager.acquire({ workspaceId: 'other', timeoutMs: 5_000 })).workspace.state).toBe('ready');
    // Once the hung open returns, the aborted creation fails and frees its slot; the id opens anew.
    hung.open();
    place.gates.delete('hung');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(manager.stats()).toMatchObject({ creating: 0 });
    expect((await manager.acquire({ workspaceId: 'hung', timeoutMs: 5_000 })).workspace.state).toBe('ready');
  });

  it('fails a caller that waited past its timeout with TIMEOUT, and forgets its place', async () => {
    const place = world();
    await using manager = managerOf(place, { maxOpen: 1, acquireTimeoutMs: 10 });
    const held = await manager.acquire({ workspaceId: 'held', timeoutMs: 5_000 });
    const error = await rejection(manager.acquire({ workspaceId: 'late' }));
    expect(isWsError(error, 'TIMEOUT'), String(error)).toBe(true);
    expect((error as WsError).details).toMatchObject({ workspaceId: 'late', maxOpen: 1 });
    expect(manager.stats()).toMatchObject({ open: 1, queued: 0 });
    const aborted = new AbortController();
    const waiting = manager.acquire({
      workspaceId: 'late',
      timeoutMs: Number.POSITIVE_INFINITY,
      signal: aborted.signal,
    });
    aborted.abort();
    expect(isWsError(await rejection(waiting), 'ABORTED')).toBe(true);
    expect(manager.stats().queued).toBe(0);
    held.release();
    expect((await manager.acquire({ workspaceId: 'late', timeoutMs: 5_000 })).workspace.state).toBe('ready');
    expect(place.opened).toEqual(['held', 'late']);
  });

  it('never evicts a leased workspace or one with a call in flight, and evicts the idle ones', async () => {
    const place = world();
    await using manager = managerOf(place, { idleTtlMs: 0, sweepIntervalMs: 3_600_000 });
    const evicted = record(manager, 'evict');
    const closed = record(manager, 'close');
    const leased = await manager.acquire({ workspaceId: 'leased' });
    const busy = await manager.get({ workspaceId: 'busy' });
    const tooling = await manager.get({ workspaceId: 'tooling' });
    await manager.get({ workspaceId: 'idle' });

    const stop = new AbortController();
    const running = busy.getSandbox().exec(['sleep', '600'], { signal: stop.signal });
    const bash = (await tooling.listTools()).find((tool) => tool.name === 'Bash');
    const toolStop = new AbortController();
    const toolCall = bash?.call({ command: 'sleep 600' }, { signal: toolStop.signal });
    expect(manager.stats()).toMatchObject({ open: 4, leased: 1, busy: 2 });

    expect(await manager.sweep()).toEqual(['idle']);
    expect(evicted).toMatchObject([{ workspaceId: 'idle', reason: 'idle' }]);
    expect(closed).toEqual([{ workspaceId: 'idle', reason: 'evicted' }]);
    expect(await manager.sweep()).toEqual([]);
    expect(leased.workspace.state).toBe('ready');
    expect(busy.state).toBe('ready');

    stop.abort();
    await rejection(running);
    toolStop.abort();
    await toolCall?.catch(() => {});
    expect((await manager.sweep()).sort()).toEqual(['busy', 'tooling']);
    expect(busy.state).toBe('closed');
    leased.release();
    expect(await manager.sweep()).toEqual(['leased']);
    expect(manager.stats().open).toBe(0);
    expect(place.closed.sort()).toEqual(['busy', 'idle', 'leased', 'tooling']);
  });

  it('lists what it holds with who asked, idle time, leases and calls in flight; the factory hears who asked', async () => {
    const place = world();
    const asked: unknown[] = [];
    const slow = gate();
    await using manager = new WorkspaceManager({
      factory: async (workspaceId, { request }) => {
        asked.push({ workspaceId, ...request });
        if (workspaceId === 'slow') await slow.promise;
        return new WorkspaceEngine({ workspaceId, provider: new HostProvider(workspaceId, place) });
      },
    });
    const lease = await manager.acquire({ userId: 'u1', agentId: 'coder', sessionId: 's1' });
    const other = await manager.get({ workspaceId: 'plain' });
    const creating = manager.get({ workspaceId: 'slow', userId: 'u2' });
    const stop = new AbortController();
    const running = other.getSandbox().exec(['sleep', '600'], { signal: stop.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // A later request of the same workspace keeps the first one's user and agent.
    await manager.get({ userId: 'u1', agentId: 'coder', sessionId: 's2' });
    expect(asked).toEqual([
      { workspaceId: lease.workspaceId, userId: 'u1', agentId: 'coder', sessionId: 's1' },
      { workspaceId: 'plain' },
      { workspaceId: 'slow', userId: 'u2' },
    ]);
    const listed = manager.list();
    expect(listed).toEqual([
      {
        workspaceId: lease.workspaceId,
        userId: 'u1',
        agentId: 'coder',
        sessionId: 's1',
        state: 'open',
        idleMs: expect.any(Number),
        leases: 1,
        inFlight: 0,
        waiters: 0,
      },
      { workspaceId: 'plain', state: 'open', idleMs: 0, leases: 0, inFlight: 1, waiters: 0 },
      { workspaceId: 'slow', userId: 'u2', state: 'creating', idleMs: 0, leases: 0, inFlight: 0, waiters: 1 },
    ]);
    expect(listed[0]?.idleMs).toBeGreaterThanOrEqual(0);
    stop.abort();
    await rejection(running);
    slow.open();
    await creating;
    lease.release();
    const closing = manager.close('slow');
    expect(manager.list().find((info) => info.workspaceId === 'slow')).toMatchObject({
      state: 'closing',
      userId: 'u2',
    });
    await closing;
    expect(manager.list().map((info) => info.workspaceId)).toEqual([lease.workspaceId, 'plain']);
  });

  it('keeps workspaces younger than the TTL', async () => {
    const place = world();
    await using manager = managerOf(place, { idleTtlMs: 3_600_000 });
    await manager.get({ workspaceId: 'recent' });
    expect(await manager.sweep()).toEqual([]);
    expect(manager.has('recent')).toBe(true);
  });

  it('sweeps on its own timer', async () => {
    const place = world();
    await using manager = managerOf(place, { idleTtlMs: 0, sweepIntervalMs: 5 });
    const evicted = new Promise<string>((resolve) =>
      manager.on('evict', (event) => resolve(event.workspaceId)),
    );
    await manager.get({ workspaceId: 'swept' });
    expect(await evicted).toBe('swept');
  });

  it('reports a failed creation to every caller and as an error event, and frees its slot', async () => {
    const place = world();
    place.failing.add('broken');
    await using manager = managerOf(place, { maxOpen: 1 });
    const errors = record(manager, 'error');
    const failures = await Promise.all(
      [1, 2, 3].map(() => rejection(manager.acquire({ workspaceId: 'broken' }))),
    );
    for (const failure of failures) expect(isWsError(failure, 'BACKEND_UNAVAILABLE')).toBe(true);
    expect(place.opened).toEqual(['broken']);
    expect(errors).toMatchObject([{ workspaceId: 'broken', operation: 'open' }]);
    expect(manager.stats()).toMatchObject({ open: 0, creating: 0, queued: 0 });
    expect((await manager.acquire({ workspaceId: 'fine' })).workspace.state).toBe('ready');
  });

  it('refuses a factory that returns a workspace of another id', async () => {
    const place = world();
    await using manager = new WorkspaceManager({
      factory: () =>
        new WorkspaceEngine({ workspaceId: 'other', provider: new HostProvider('other', place) }),
    });
    expect(isWsError(await rejection(manager.get({ workspaceId: 'asked' })), 'INVALID_ARGUMENT')).toBe(true);
  });

  it('closes one workspace, all of them, and refuses requests once disposed', async () => {
    const place = world();
    const manager = managerOf(place);
    const closed = record(manager, 'close');
    const lease = await manager.acquire({ workspaceId: 'x' });
    await manager.get({ workspaceId: 'y' });
    await manager.close('x');
    expect(lease.workspace.state).toBe('closed');
    expect(isWsError(await rejection(lease.workspace.listTools()), 'DISPOSED')).toBe(true);
    await manager.close('x');
    const again = await manager.acquire({ workspaceId: 'x' });
    expect(again.workspace).not.toBe(lease.workspace);
    expect(again.workspace.state).toBe('ready');
    await manager.closeAll();
    expect(manager.stats().open).toBe(0);
    expect(closed.map((event) => `${event.workspaceId}:${event.reason}`).sort()).toEqual([
      'x:closed',
      'x:closed',
      'y:closed',
    ]);
    await manager.get({ workspaceId: 'z' });
    await manager[Symbol.asyncDispose]();
    expect(closed.at(-1)).toEqual({ workspaceId: 'z', reason: 'disposed' });
    expect(isWsError(await rejection(manager.acquire({ workspaceId: 'z' })), 'DISPOSED')).toBe(true);
  });

  it('replaces a workspace closed through the workspace itself', async () => {
    const place = world();
    await using manager = managerOf(place);
    const lease = await manager.acquire({ workspaceId: 'self-closed' });
    await lease.workspace.close();
    const next = await manager.acquire({ workspaceId: 'self-closed' });
    expect(next.workspace.state).toBe('ready');
    expect(place.opened).toEqual(['self-closed', 'self-closed']);
  });

  it('refuses unusable options', () => {
    for (const options of [
      { maxOpen: 0 },
      { maxOpen: 1.5 },
      { idleTtlMs: -1 },
      { sweepIntervalMs: 0 },
      { isolation: 'per_tenant' },
    ]) {
      let thrown: unknown;
      try {
        managerOf(world(), options as never);
      } catch (error) {
        thrown = error;
      }
      expect(isWsError(thrown, 'INVALID_ARGUMENT'), JSON.stringify(options)).toBe(true);
    }
  });
});
