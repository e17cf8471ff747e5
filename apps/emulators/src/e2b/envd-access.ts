import { Code, ConnectError } from '@connectrpc/connect';
import { type Account, UnknownUserError, usernameFromAuthorization } from './accounts.js';
import { FilesystemOps } from './file-ops.js';
import type { SandboxRecord, SandboxRegistry } from './sandbox-registry.js';

/** Header names as Node and the Fetch API both accept them. */
export const SANDBOX_ID_HEADER = 'e2b-sandbox-id';
const ACCESS_TOKEN_HEADER = 'x-access-token';

/** Why an envd request cannot be served, as both an HTTP status and a Connect code. */
export class EnvdAccessError extends ConnectError {
  constructor(
    message: string,
    code: Code,
    readonly httpStatus: number,
  ) {
    super(message, code);
  }
}

/** Who an envd request comes from and which sandbox it acts on. */
export interface EnvdCaller {
  sandbox: SandboxRecord;
  account: Account;
  files: FilesystemOps;
}

type HeaderSource = { get(name: string): string | null | undefined };

/**
 * The sandbox an envd request names (header `E2b-Sandbox-Id`), checked against its access token
 * (`X-Access-Token`), with the user it acts as (`username`, else the Basic `Authorization` header).
 * Unknown and paused sandboxes answer like E2B's proxy does for a sandbox it cannot reach (502 /
 * `unavailable`, which the SDK reports as a timed-out sandbox).
 */
export async function resolveEnvdCaller(
  registry: SandboxRegistry,
  headers: HeaderSource,
  username?: string,
): Promise<EnvdCaller> {
  const sandbox = requireSandbox(registry, headers);
  const user = username ?? usernameFromAuthorization(headers.get('authorization'));
  let account: Account;
  try {
    account = await sandbox.accounts.resolve(user);
  } catch (error) {
    if (error instanceof UnknownUserError)
      throw new EnvdAccessError(error.message, Code.InvalidArgument, 400);
    throw error;
  }
  return { sandbox, account, files: new FilesystemOps(sandbox.container) };
}

/** The running sandbox an envd request names, after its access token is checked. */
export function requireSandbox(registry: SandboxRegistry, headers: HeaderSource): SandboxRecord {
  const sandboxId = headers.get(SANDBOX_ID_HEADER) ?? '';
  const sandbox = registry.get(sandboxId);
  if (!sandbox) {
    throw new EnvdAccessError(`The sandbox ${sandboxId} was not found`, Code.Unavailable, 502);
  }
  if (sandbox.envdAccessToken && headers.get(ACCESS_TOKEN_HEADER) !== sandbox.envdAccessToken) {
    throw new EnvdAccessError('invalid or missing access token (X-Access-Token)', Code.Unauthenticated, 401);
  }
  if (sandbox.state !== 'running') {
    throw new EnvdAccessError(
      `The sandbox ${sandboxId} is paused; connect to it to resume it`,
      Code.Unavailable,
      502,
    );
  }
  return sandbox;
}
