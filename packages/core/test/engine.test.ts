import { describe, expect, it } from 'vitest';
import { createExecResult, type Provider, type ProviderSession, WorkspaceEngine } from '../src/backend.js';
import { type CallOptions, type ExecOptions, type Sandbox, WsError } from '../src/index.js';

// A provider whose sandbox records commands; it lets the engine's lifecycle rules be checked on
// their own, apart from any backend (the backends run the full conformance suite).
class RecordingProvider implements Provider {
  readonly backend = 'recording';
  readonly description = 'recording';
  readonly expectedWorkdir = '/work';
  readonly persistent = true;
  readonly isolation = 'none' as const;
  readonly mcp = false;
  opens = 0;
  closes = 0;
  destroys = 0;
  failNextOpen = false;
  commands: string[][] = [];

  async open(options: CallOptions): Promise<ProviderSession> {
    this.opens++;
    await new Promise((resolve) => setTimeout(resolve, 5));
    options.signal?.throwIfAborted();
    if (this.failNextOpen) {
      this.failNextOpen = false;
      throw new WsError('BACKEND_UNAVAILABLE', 'engine down');
    }
    const commands = this.commands;
    const sandbox: Sandbox = {
      backend: 'recording',
      workdir: '/work',
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
      async exec(argv: readonly string[], _options?: ExecOptions) {
        commands.push([...argv]);
        return createExecResult({ exitCode: 0 });
      },
      async readFile() {
        throw new WsError('NOT_FOUND', 'none');
      },
      async writeFile() {},
    };
    return { sandbox, workdir: '/work' };
  }

  async close(): Promise<void> {
    this.closes++;
  }

  async destroy(): Promise<void> {
    this.destroys++;
  }
}

describe('WorkspaceEngine lifecycle', () => {
  it('opens the provider once under concurrent initialize calls and lays out the workdir in one command', async () => {
    const provider = new RecordingProvider();
    const engine = new WorkspaceEngine({ provider, workspaceId: 'w1' });
    await Promise.all([engine.initialize(), engine.initialize(), engine.initialize()]);
    expect(provider.opens).toBe(1);
    // Start-up costs two commands on a backend without natives: the layout, and one listing of skills/.
    expect(provider.commands[0]).toEqual([
      'mkdir',
      '-p',
      '--',
      '/work',
      '/work/data',
      '/work/skills/.seed',
      '/work/sessions',
    ]);
    expect(provider.commands).toHaveLength(2);
  });

  it('releases what it acquired when initialize fails, and can be retried', async () => {
    const provider = new RecordingProvider();
    provider.failNextOpen = true;
    const engine = new WorkspaceEngine({ provider });
    await expect(engine.initialize()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect(engine.state).toBe('created');
    expect(provider.closes).toBe(1);
    await engine.initialize();
    expect(engine.state).toBe('ready');
  });

  it('closes once, waits for a running initialize, and destroys after close', async () => {
    const provider = new RecordingProvider();
    const engine = new WorkspaceEngine({ provider });
    const init = engine.initialize();
    await Promise.all([engine.close(), engine.close()]);
    await init;
    expect(provider.closes).toBe(1);
    expect(engine.state).toBe('closed');
    await engine.destroy();
    await engine.destroy();
    expect(provider.destroys).toBe(1);
  });

  it('fills the instructions template and validates the id', () => {
    const engine = new WorkspaceEngine({
      provider: new RecordingProvider(),
      instructions: 'on {backend} at {workdir}; {workdir}',
    });
    expect(engine.getInstructions()).toBe('on recording at /work; /work');
    expect(() => new WorkspaceEngine({ provider: new RecordingProvider(), workspaceId: '../x' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });
});
