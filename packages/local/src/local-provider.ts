import { rm } from 'node:fs/promises';
import {
  assertDeletableHostDir,
  fromErrno,
  makeHostDirs,
  type Provider,
  type ProviderOpenOptions,
  type ProviderSession,
  throwIfAborted,
} from '@ws/core/backend';
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

  async open(options: ProviderOpenOptions): Promise<ProviderSession> {
    throwIfAborted(options.signal);
    try {
      await makeHostDirs(this.expectedWorkdir);
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
    await rm(assertDeletableHostDir(this.expectedWorkdir), { recursive: true, force: true });
  }
}
