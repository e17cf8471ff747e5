import { chmodSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createGatewayServer } from './server.js';

// node gateway.mjs (--socket PATH | --port N [--host ADDRESS] [--port-file PATH]) --workdir DIR
//                   [--allow ROOT]... [--token-file PATH] [--nonce N] [--pid-file PATH]
// --host defaults to 127.0.0.1; a container whose port is published to the host's loopback needs
// 0.0.0.0 inside it (the token still guards every request).
// The token comes from --token-file (read, then deleted) or the WS_GATEWAY_TOKEN environment
// variable, never from the command line, which other processes can read.
const { values } = parseArgs({
  options: {
    socket: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    'pid-file': { type: 'string' },
    'token-file': { type: 'string' },
    nonce: { type: 'string' },
    port: { type: 'string' },
    'port-file': { type: 'string' },
    workdir: { type: 'string', default: process.cwd() },
    allow: { type: 'string', multiple: true },
  },
});

let token = process.env.WS_GATEWAY_TOKEN ?? '';
if (values['token-file']) {
  token = readFileSync(values['token-file'], 'utf8').trim();
  rmSync(values['token-file'], { force: true });
}
const nonce = values.nonce ?? process.env.WS_GATEWAY_NONCE ?? '';
if (token.length < 16) {
  process.stderr.write('gateway: WS_GATEWAY_TOKEN must hold a token of at least 16 characters\n');
  process.exit(2);
}
delete process.env.WS_GATEWAY_TOKEN;
delete process.env.WS_GATEWAY_NONCE;

const server = createGatewayServer({
  token,
  nonce,
  workdir: values.workdir ?? process.cwd(),
  ...(values.allow && values.allow.length > 0 ? { allowedRoots: values.allow } : {}),
});

if (values['pid-file']) writeFileSync(values['pid-file'], String(process.pid));

const shutdown = () => {
  server.close();
  server.closeAllConnections?.();
  if (values.socket) rmSync(values.socket, { force: true });
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

if (values.socket) {
  rmSync(values.socket, { force: true });
  server.listen(values.socket, () => {
    chmodSync(values.socket as string, 0o600);
    process.stderr.write(`gateway: serving on ${values.socket}\n`);
  });
} else {
  server.listen(Number(values.port ?? 0), values.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    if (values['port-file']) writeFileSync(values['port-file'], String(port));
    process.stderr.write(`gateway: serving on ${values.host}:${port}\n`);
  });
}
