import { isRecord } from '../http/http-util.js';
import { badRequest, K8sError } from './status.js';

/** The patch types the API server takes, by `Content-Type`, as client-node's `PatchStrategy` names them. */
export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** The patch type of a request's `Content-Type`, or a 415 as the API server words it. */
export function patchTypeOf(contentType: string | undefined): 'json' | 'merge' | 'strategic' {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === PATCH_TYPES.json) return 'json';
  if (type === PATCH_TYPES.merge) return 'merge';
  if (type === PATCH_TYPES.strategic) return 'strategic';
  throw new K8sError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.json}, ${PATCH_TYPES.merge}, ${PATCH_TYPES.strategic}${type === PATCH_TYPES.apply ? ' (this emulator has no server-side apply)' : ''}`,
  );
}

/** RFC 7386: objects merge key by key, `null` removes a key, anything else replaces. */
function mergePatch(target: Json, patch: Json): Json {
  if (!isRecord(patch)) return clone(patch);
  const out: { [key: string]: Json } = isRecord(target) ? { ...(target as { [key: string]: Json }) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key] ?? null, value);
  }
  return out;
}

/** A 422 for a JSON patch that is well formed but does not apply to the object. */
function doesNotApply(message: string): K8sError {
  return new K8sError(422, 'Invalid', `the server rejected our request due to an error in our request`, {
    causes: [{ reason: 'FieldValueInvalid', message }],
  });
}

/** The reference tokens of an RFC 6901 pointer (`~1` is `/`, `~0` is `~`). */
function tokens(pointer: unknown): string[] {
  if (typeof pointer !== 'string' || (pointer !== '' && !pointer.startsWith('/')))
    throw badRequest(`invalid JSON pointer ${JSON.stringify(pointer)}`);
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The container of the last token and that token; `create`: the container must exist, not the value. */
function locate(document: Json, path: string[], operation: string): { parent: Json; key: string } {
  let parent = document;
  for (const token of path.slice(0, -1)) {
    const next = Array.isArray(parent)
      ? parent[Number(token)]
      : isRecord(parent)
        ? (parent as { [key: string]: Json })[token]
        : undefined;
    if (next === undefined)
      throw doesNotApply(
        `jsonpatch ${operation} operation does not apply: doc is missing path: "/${path.join('/')}"`,
      );
    parent = next;
  }
  return { parent, key: path[path.length - 1] as string };
}

function read(document: Json, path: string[], operation: string): Json {
  if (path.length === 0) return document;
  const { parent, key } = locate(document, path, operation);
  const value = Array.isArray(parent)
    ? parent[Number(key)]
    : isRecord(parent)
      ? (parent as { [key: string]: Json })[key]
      : undefined;
  if (value === undefined)
    throw doesNotApply(
      `jsonpatch ${operation} operation does not apply: doc is missing key: /${path.join('/')}`,
    );
  return value;
}

function remove(document: Json, path: string[], operation: string): Json {
  const value = read(document, path, operation);
  const { parent, key } = locate(document, path, operation);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete (parent as { [key: string]: Json })[key];
  return value;
}

function add(document: Json, path: string[], value: Json, operation: string): Json {
  if (path.length === 0) return clone(value);
  const { parent, key } = locate(document, path, operation);
  if (Array.isArray(parent)) {
    const index = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > parent.length)
      throw doesNotApply(`jsonpatch ${operation} operation does not apply: index out of range: ${key}`);
    parent.splice(index, 0, clone(value));
  } else if (isRecord(parent)) (parent as { [key: string]: Json })[key] = clone(value);
  else
    throw doesNotApply(
      `jsonpatch ${operation} operation does not apply: doc is missing path: "/${path.join('/')}"`,
    );
  return document;
}

/** RFC 6902 over a copy of `document`: every operation applies, or none does. */
function jsonPatch(document: Json, operations: unknown): Json {
  if (!Array.isArray(operations)) throw badRequest('a JSON patch must be a list of operations');
  let out = clone(document);
  for (const operation of operations) {
    if (!isRecord(operation) || typeof operation.op !== 'string')
      throw badRequest(`invalid JSON patch operation ${JSON.stringify(operation)}`);
    const { op } = operation;
    const path = tokens(operation.path);
    const needsValue = op === 'add' || op === 'replace' || op === 'test';
    if (needsValue && !('value' in operation)) throw badRequest(`the ${op} operation needs a value`);
    const value = operation.value as Json;
    switch (op) {
      case 'add':
        out = add(out, path, value, op);
        break;
      case 'remove':
        remove(out, path, op);
        break;
      case 'replace':
        read(out, path, op);
        if (path.length === 0) out = clone(value);
        else {
          remove(out, path, op);
          out = add(out, path, value, op);
        }
        break;
      case 'move':
      case 'copy': {
        const from = tokens(operation.from);
        const moved = op === 'move' ? remove(out, from, op) : clone(read(out, from, op));
        out = add(out, path, moved, op);
        break;
      }
      case 'test':
        if (JSON.stringify(read(out, path, op)) !== JSON.stringify(value))
          throw doesNotApply(`testing value /${path.join('/')} failed`);
        break;
      default:
        throw badRequest(`unexpected JSON patch operation ${JSON.stringify(op)}`);
    }
  }
  return out;
}

/**
 * `document` with `patch` applied as the API server applies a patch of that type. A strategic merge
 * patch is applied as a merge patch: the same for maps (labels, annotations), which is what the
 * emulator's objects let change.
 */
export function applyPatch(
  type: 'json' | 'merge' | 'strategic',
  document: Record<string, unknown>,
  patch: unknown,
): Record<string, unknown> {
  if (type === 'json') {
    const patched = jsonPatch(document as Json, patch);
    if (!isRecord(patched)) throw doesNotApply('the patched object is not an object');
    return patched;
  }
  if (!isRecord(patch)) throw badRequest('a merge patch must be a JSON object');
  return mergePatch(document as Json, patch as Json) as Record<string, unknown>;
}
