import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { LocalSandbox } from '@ws/local/sandbox';
import { confinedPath } from './confined-path.js';
import { sendError } from './http-io.js';
import { McpSessions } from './mcp-sessions.js';
import { route } from './router.js';

export { MAX_JSON_BODY_BYTES } from './http-io.js';

/** Options of {@link createGatewayServer}. */
export interface GatewayServerOptions {
  /** Bearer token every request but `/health` must carry. */
  token: string;
  /** Reported by `/health`, so the host can tell this launch from an older one. */
  nonce: string;
  /** Default working directory of commands and MCP servers. */
  workdir: string;
  /** When set, file operations must resolve (symbolic links followed) under one of these roots. */
  allowedRoots?: readonly string[];
}

/**
 * The gateway's HTTP server: commands, files and MCP sessions, inside the sandbox it runs in.
 * Returns the server, not yet listening.
 */
export function createGatewayServer(options: GatewayServerOptions): Server {
  const sandbox = new LocalSandbox({ workdir: options.workdir });
  const sessions = new McpSessions(options.workdir);
  const expected = Buffer.from(`Bearer ${options.token}`);
  const context = {
    nonce: options.nonce,
    sandbox,
    sessions,
    confined: (path: string) => confinedPath(path, options.workdir, options.allowedRoots),
    authorized: (request: IncomingMessage) => {
      const given = Buffer.from(request.headers.authorization ?? '');
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
  };
  const server = createServer((request, response) => {
    route(context, request, response).catch((error: unknown) => sendError(response, error));
  });
  // Idle connections stay open until the host closes them: a connection the gateway closes is then
  // always its death, which the host reports, never a race with a request in flight. Uploads and
  // commands may take as long as they take.
  server.keepAliveTimeout = 0;
  server.requestTimeout = 0;
  server.on('close', () => {
    sessions.closeAll();
    void sandbox.dispose();
  });
  return server;
}
