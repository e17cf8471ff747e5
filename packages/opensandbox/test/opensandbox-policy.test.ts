import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WsError } from '@ws/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenSandboxWorkspace, type OpenSandboxWorkspaceOptions } from '../src/index.js';

// The sandbox policy options as the SDK sends them to the lifecycle API: a stand-in server on
// 127.0.0.1 lists no sandbox, records each create request and refuses it (nothing is created).
let server: Server;
let domain: string;
const created: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      if (request.method === 'GET') {
        response.end(
          JSON.stringify({ items: [], pagination: { page: 1, pageSize: 100, hasNextPage: false } }),
        );
        return;
      }
      if (request.method === 'POST') created.push(JSON.parse(body) as Record<string, unknown>);
      response.statusCode = 400;
      response.end(JSON.stringify({ code: 'INVALID_REQUEST', message: 'recorded, not created' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  domain = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The create request a workspace with `options` sends. */
async function createRequest(options: OpenSandboxWorkspaceOptions): Promise<Record<string, unknown>> {
  const before = created.length;
  const workspace = new OpenSandboxWorkspace({ domain, apiKey: 'test', gateway: false, ...options });
  await expect(workspace.initialize()).rejects.toThrow();
  await workspace.close().catch(() => {});
  const request = created[before];
  if (!request || created.length !== before + 1)
    throw new Error(`${created.length - before} create requests`);
  return request;
}

function thrown(run: () => unknown): WsError {
  try {
    run();
  } catch (error) {
    if (error instanceof WsError) return error;
    throw error;
  }
  throw new Error('did not throw');
}

describe('OpenSandbox sandbox policy: the create request', () => {
  it('maps limits onto resourceLimits, keeping the SDK default for the rest', async () => {
    expect((await createRequest({ limits: { cpus: 0.5, memoryMiB: 512 } })).resourceLimits).toEqual({
      cpu: '500m',
      memory: '512Mi',
    });
    expect((await createRequest({ limits: { memoryMiB: 256 } })).resourceLimits).toEqual({
      cpu: '1',
      memory: '256Mi',
    });
    expect((await createRequest({})).resourceLimits).toEqual({ cpu: '1', memory: '2Gi' });
  });

  it('keeps the native resources, adds the limits to them, and refuses one limit given twice', async () => {
    expect(
      (await createRequest({ resources: { cpu: '2', gpu: '1' }, limits: { memoryMiB: 1024 } }))
        .resourceLimits,
    ).toEqual({ cpu: '2', gpu: '1', memory: '1024Mi' });
    const error = thrown(
      () => new OpenSandboxWorkspace({ resources: { memory: '1Gi' }, limits: { memoryMiB: 512 } }),
    );
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(/limits\.memoryMiB and resources\.memory/);
  });

  it("sends a deny-all egress policy for network: 'none' and allow rules for an allow list", async () => {
    expect((await createRequest({ network: 'none' })).networkPolicy).toEqual({
      defaultAction: 'deny',
      egress: [],
    });
    expect(
      (await createRequest({ network: { allow: ['10.11.12.0/24', 'registry.npmjs.org', '*.example.com'] } }))
        .networkPolicy,
    ).toEqual({
      defaultAction: 'deny',
      egress: [
        { action: 'allow', target: '10.11.12.0/24' },
        { action: 'allow', target: 'registry.npmjs.org' },
        { action: 'allow', target: '*.example.com' },
      ],
    });
    expect((await createRequest({ network: 'full' })).networkPolicy).toBeUndefined();
    expect((await createRequest({})).networkPolicy).toBeUndefined();
  });

  it('refuses pids, disk and privileges with CAPABILITY_UNSUPPORTED before any request', () => {
    const before = created.length;
    for (const [options, why] of [
      [{ limits: { pids: 64 } }, /limits\.pids: the process limit is the server's setting/],
      [{ limits: { diskMiB: 1024 } }, /limits\.diskMiB/],
      [{ privileges: 'hardened' }, /privileges: 'hardened'.*server's setting/],
      [{ privileges: 'standard' }, /privileges: 'standard'/],
    ] as const) {
      const error = thrown(() => new OpenSandboxWorkspace({ domain, ...options }));
      expect(error.code).toBe('CAPABILITY_UNSUPPORTED');
      expect(error.message).toMatch(why);
    }
    expect(created.length).toBe(before);
  });

  it('refuses malformed values as invalid', () => {
    for (const options of [
      { limits: { memoryMiB: -1 } },
      { limits: { cpus: '1' } },
      { network: 'off' },
      { network: { allow: ['a b'] } },
      { network: { allow: ['10.0.0.0/8'], deny: [] } },
    ])
      expect(thrown(() => new OpenSandboxWorkspace(options as never)).code, JSON.stringify(options)).toBe(
        'INVALID_ARGUMENT',
      );
  });
});
