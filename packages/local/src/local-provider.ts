import { mkdir, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve, sep } from 'node:path';
import {
  type CallOptions,
  fromErrno,
  type Provider,
  type ProviderSession,
  throwIfAborted,
  WsError,
} from '@ws/core';
import { LocalSandbox, type LocalSandboxOptions } from './local-sandbox.js';
import { HostMcpConnector } from './mcp-host-connector.js';

/** Creates the host workdir on open; deletes it on destroy (never `/`, the home directory or the cwd). */
export class LocalProvider implements Provider {
  readonly backend = 'local';
  readonly description = 'local';
  readonly persistent = true;
  readonly isolation = 'none' as const;
  readonly mcp = true;
  readonly expectedWorkdir: string;
  private sandbox: LocalSandbox | undefined;

  constructor(private readonly options: LocalSandboxOptions) {
    this.expectedWorkdir = options.workdir;
  }

  async open(options: CallOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    try {
      await mkdir(this.expectedWorkdir, { recursive: true });
    } catch (error) {
      throw fromErrno(error, `Creating the workdir ${this.expectedWorkdir} failed`, {
        path: this.expectedWorkdir,
      });
    }
    this.sandbox = new LocalSandbox(this.options);
    const mcp = new HostMcpConnector({
      cwd: this.expectedWorkdir,
      ...(this.options.env ? { env: this.options.env } : {}),
    });
    return { sandbox: this.sandbox, workdir: this.expectedWorkdir, mcp };
  }

  async close(): Promise<void> {
    const sandbox = this.sandbox;
    this.sandbox = undefined;
    await sandbox?.dispose();
  }

  async destroy(): Promise<void> {
    const workdir = this.expectedWorkdir;
    const protectedPaths = new Set(['/', homedir(), resolve(process.cwd())]);
    const cwd = resolve(process.cwd());
    if (protectedPaths.has(workdir) || cwd.startsWith(workdir + sep)) {
      throw new WsError(
        'PERMISSION_DENIED',
        `Refusing to delete ${workdir}: it is the root, the home directory or holds the current directory`,
        {
          details: { path: workdir },
        },
      );
    }
    await rm(workdir, { recursive: true, force: true });
  }
}
