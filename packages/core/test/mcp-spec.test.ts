import { describe, expect, it } from 'vitest';
import { WsError } from '../src/contracts/errors.js';
import type { McpServerSpec } from '../src/contracts/mcp.js';
import { fromStoredSpec, mcpHttpProtocol, normalizeMcpSpec, toStoredSpec } from '../src/internal/mcp/spec.js';

describe('MCP over HTTP: which protocol', () => {
  it.each([
    ['http', 'http://h/mcp', 'streamable-http'],
    ['http', 'http://h/sse', 'sse'],
    ['http', 'http://h/sse/', 'sse'],
    ['http', 'http://h/messages/', 'sse'],
    ['http', 'http://h/api/messages', 'sse'],
    ['http', 'http://h/sse?token=x', 'sse'],
    ['http', 'http://h/ssex', 'streamable-http'],
    ['http', 'http://h/messages/x', 'streamable-http'],
    ['sse', 'http://h/mcp', 'sse'],
    ['streamable-http', 'http://h/sse', 'streamable-http'],
  ] as const)('%s %s speaks %s', (type, url, protocol) => {
    expect(mcpHttpProtocol({ type, url })).toBe(protocol);
  });

  it('keeps a named protocol in the .mcp file only where the URL alone would choose the other', () => {
    const stored = (transport: McpServerSpec['transport']) =>
      toStoredSpec(normalizeMcpSpec({ name: 's', transport })).mcp_config;
    // AgentScope reads these as they are: the URL chooses the same protocol.
    expect(stored({ type: 'sse', url: 'http://h/sse' })).not.toHaveProperty('transport');
    expect(stored({ type: 'http', url: 'http://h/stream' })).not.toHaveProperty('transport');
    expect(stored({ type: 'streamable-http', url: 'http://h/mcp' })).not.toHaveProperty('transport');
    expect(stored({ type: 'sse', url: 'http://h/stream' })).toMatchObject({
      type: 'http_mcp',
      transport: 'sse',
    });
    expect(stored({ type: 'streamable-http', url: 'http://h/sse' })).toMatchObject({
      transport: 'streamable_http',
    });
  });

  it('reads each back as the protocol it speaks', () => {
    for (const transport of [
      { type: 'sse', url: 'http://h/stream' },
      { type: 'streamable-http', url: 'http://h/messages/' },
      { type: 'http', url: 'http://h/messages/' },
    ] as const) {
      const back = fromStoredSpec(toStoredSpec(normalizeMcpSpec({ name: 's', transport })));
      expect(mcpHttpProtocol(back.transport as typeof transport)).toBe(mcpHttpProtocol(transport));
    }
  });

  it('refuses an unknown transport type', () => {
    expect(() =>
      normalizeMcpSpec({ name: 's', transport: { type: 'websocket', url: 'http://h/' } } as never),
    ).toThrow(WsError);
  });
});
