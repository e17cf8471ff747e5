import { describe, expect, it } from 'vitest';
import { sandboxDto } from '../src/opensandbox/lifecycle.js';
import type { SandboxRecord } from '../src/opensandbox/sandbox-registry.js';
import type { CommandStatusBody, EndpointBody, SandboxBody } from '../src/opensandbox/wire-types.js';

// The emulator's bodies are typed with the SDK's generated OpenAPI types: a body that lacks a field
// the SDK requires does not compile (the typecheck fails when the line below stops being an error).
const status = { state: 'Running', lastTransitionAt: new Date(0).toISOString() };

// @ts-expect-error `createdAt` and `entrypoint` are required by the SDK's `Sandbox`.
const incomplete: SandboxBody = { id: 'sandbox', status };

// @ts-expect-error `endpoint` is required by the SDK's `Endpoint`.
const noEndpoint: EndpointBody = { headers: {} };

describe('OpenSandbox bodies typed with the SDK', () => {
  it('builds the lifecycle API Sandbox with every field the SDK requires', () => {
    const record = {
      id: 'sandbox-1',
      image: 'workspace',
      entrypoint: ['tail', '-f', '/dev/null'],
      createdAt: new Date(1_000),
      accessToken: undefined,
      settings: { metadata: { team: 'a' }, expiresAt: null },
      state: 'Running',
      reason: undefined,
      message: undefined,
      lastTransitionAt: new Date(2_000),
    } as unknown as SandboxRecord;
    const body: SandboxBody = sandboxDto(record);
    expect(body).toEqual({
      id: 'sandbox-1',
      image: { uri: 'workspace' },
      status: { state: 'Running', lastTransitionAt: new Date(2_000).toISOString() },
      metadata: { team: 'a' },
      entrypoint: ['tail', '-f', '/dev/null'],
      createdAt: new Date(1_000).toISOString(),
    });
    const command: CommandStatusBody = { id: 'c', running: false, exit_code: 0 };
    expect([incomplete.id, noEndpoint.headers, command.exit_code]).toEqual(['sandbox', {}, 0]);
  });
});
