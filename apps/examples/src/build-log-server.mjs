// A tiny MCP server (stdio, no dependencies) with one tool, `build_log`, that prints a build log of
// 5 000 000 characters: 100 000 numbered lines, one of them an error. The offloading examples give
// it to their agent, because an MCP tool's output reaches the adapter whole, where Bash cuts its
// output at 30 000 characters.
//
//   node build-log-server.mjs            (spoken to over stdin/stdout by an MCP client)

import { pathToFileURL } from 'node:url';

/** The log the tool prints: `line 000000 …` to `line 099999 …`, 50 characters each, newline included. */
export function buildLog() {
  const lines = [];
  for (let index = 0; index < 100_000; index++) {
    const number = String(index).padStart(6, '0');
    lines.push(
      `line ${number} ${(index === 73_421 ? 'ERROR linker: undefined symbol' : '').padEnd(37, '.')}\n`,
    );
  }
  return lines.join('');
}

const TOOLS = [
  {
    name: 'build_log',
    description: 'Prints the whole log of the last build.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true },
  },
];

function handle(message) {
  if (message.id === undefined) return undefined;
  const reply = (result) => ({ jsonrpc: '2.0', id: message.id, result });
  switch (message.method) {
    case 'initialize':
      return reply({
        protocolVersion: message.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'build-log', version: '1.0.0' },
      });
    case 'ping':
      return reply({});
    case 'tools/list':
      return reply({ tools: TOOLS });
    case 'tools/call':
      if (message.params?.name === 'build_log')
        return reply({ content: [{ type: 'text', text: buildLog() }] });
      return { jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'Unknown tool' } };
    default:
      return {
        jsonrpc: '2.0',
        id: message.id,
        error: { code: -32601, message: `Method not found: ${message.method}` },
      };
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  let buffer = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    buffer += chunk;
    for (let newline = buffer.indexOf('\n'); newline !== -1; newline = buffer.indexOf('\n')) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (!line) continue;
      const response = handle(JSON.parse(line));
      if (response) process.stdout.write(`${JSON.stringify(response)}\n`);
    }
  });
  process.stdin.on('end', () => process.exit(0));
}
