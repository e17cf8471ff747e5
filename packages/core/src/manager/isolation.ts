import { generateId, validateId } from '../backend/ids.js';
import { WsError } from '../contracts/errors.js';
import { blake2bHex } from './blake2b.js';

/**
 * Which callers share a workspace, when they name none (the names are AgentScope's):
 * - `per_agent` (the default): one workspace per (user, agent);
 * - `per_user`: one per user, shared by all of that user's agents;
 * - `per_session`: a fresh workspace for every request that names no workspace id.
 */
export type IsolationPolicy = 'per_agent' | 'per_user' | 'per_session';

/** Who is asking for a workspace. An explicit `workspaceId` wins over the policy. */
export interface WorkspaceRequest {
  /** The workspace to use, whatever the policy (validated as one path segment). */
  workspaceId?: string | undefined;
  /** The user; needed by `per_agent` and `per_user` (`''` is a valid, shared user). */
  userId?: string | undefined;
  /** The agent; needed by `per_agent` (`''` is a valid agent). */
  agentId?: string | undefined;
  /** The session; not part of any derived id (AgentScope derives with an empty session). */
  sessionId?: string | undefined;
}

const POLICIES: readonly IsolationPolicy[] = ['per_agent', 'per_user', 'per_session'];

/** @throws WsError `INVALID_ARGUMENT` for a value that is not one of the policies. */
export function checkIsolation(value: unknown): IsolationPolicy {
  if (!POLICIES.includes(value as IsolationPolicy))
    throw new WsError(
      'INVALID_ARGUMENT',
      `isolation must be one of ${POLICIES.join(', ')}, not ${JSON.stringify(value)}`,
      { details: { isolation: value } },
    );
  return value as IsolationPolicy;
}

function requireString(value: unknown, name: string, isolation: IsolationPolicy): string {
  if (typeof value !== 'string')
    throw new WsError(
      'INVALID_ARGUMENT',
      `The ${isolation} policy derives the workspace id from ${name}, which must be a string (got ${value === undefined ? 'nothing' : typeof value}); or give a workspaceId`,
      { details: { [name]: value, isolation } },
    );
  return value;
}

/** Digest bytes of a derived id: 32 hex digits, as long as a `per_session` id. */
const DERIVED_ID_BYTES = 16;

/**
 * The id a policy derives from its inputs: the BLAKE2b digest of the JSON array
 * `["ws", <policy>, ...inputs]`. The array keeps every input apart, so distinct requests never
 * derive from the same text, whatever separators or surrogates their strings hold.
 */
function derivedId(isolation: IsolationPolicy, inputs: readonly string[]): string {
  return blake2bHex(JSON.stringify(['ws', isolation, ...inputs]), DERIVED_ID_BYTES);
}

/**
 * The workspace id of a request: an explicit `workspaceId` as given; `per_agent`, the 32-hex BLAKE2b
 * (16-byte digest) of the JSON text `["ws","per_agent",<userId>,<agentId>]`; `per_user`, that of
 * `["ws","per_user",<userId>]`; `per_session`, a fresh random id (32 hex). Distinct requests get
 * distinct ids (AgentScope's `"<userId>::<agentId>"` let `a::b`/`c` and `a`/`b::c` share one). Pure
 * but for `per_session`.
 *
 * @throws WsError `INVALID_ARGUMENT` for an unsafe `workspaceId`, an unknown policy, or a missing
 *   `userId` / `agentId` the policy needs.
 */
export function assignWorkspaceId(
  request: WorkspaceRequest,
  isolation: IsolationPolicy = 'per_agent',
): string {
  if (typeof request !== 'object' || request === null)
    throw new WsError('INVALID_ARGUMENT', 'A workspace request must be an object');
  if (request.workspaceId !== undefined) return validateId(request.workspaceId, 'workspaceId');
  switch (checkIsolation(isolation)) {
    case 'per_agent': {
      const userId = requireString(request.userId, 'userId', isolation);
      const agentId = requireString(request.agentId, 'agentId', isolation);
      return derivedId(isolation, [userId, agentId]);
    }
    case 'per_user':
      return derivedId(isolation, [requireString(request.userId, 'userId', isolation)]);
    case 'per_session':
      return generateId();
  }
}
