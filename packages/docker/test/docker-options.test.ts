import { isWsError } from '@ws/core';
import { describe, expect, it } from 'vitest';
import { DockerWorkspace } from '../src/index.js';

// Construction does no I/O: these run without a Docker engine.
describe('DockerWorkspace options', () => {
  const refusal = (options: Record<string, unknown>) => {
    try {
      new DockerWorkspace(options as never);
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it("refuses AgentScope's workdir, naming hostWorkdir, instead of silently making the files ephemeral", () => {
    const error = refusal({ workdir: './x' });
    expect(isWsError(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    expect((error as Error).message).toContain('"workdir"');
    expect((error as Error).message).toContain('"hostWorkdir"');
  });

  it('refuses a misspelt key and names the client option for an injected engine client', () => {
    expect((refusal({ hostWorkDir: './x' }) as Error).message).toContain('"hostWorkDir"');
    expect((refusal({ docker: {} }) as Error).message).toContain('"client"');
  });

  it('accepts every documented option and the signal that open() passes on', () => {
    expect(
      refusal({
        image: 'x',
        hostWorkdir: '/tmp/x',
        env: {},
        client: {},
        owner: 'o',
        gatewayChannel: 'relay',
        hostRuntimeDir: '/tmp/r',
        gateway: false,
        workspaceId: 'a',
        searchMode: 'posix',
        signal: new AbortController().signal,
      }),
    ).toBeUndefined();
  });
});
