import type { ServerResponse } from 'node:http';

/** The `reason` of a Kubernetes `Status` this emulator sends. */
export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Unauthorized'
  | 'BadRequest'
  | 'Conflict'
  | 'Invalid'
  | 'MethodNotAllowed'
  | 'Forbidden'
  | 'UnsupportedMediaType'
  | 'InternalError';

export interface StatusDetails {
  name?: string;
  kind?: string;
  causes?: { reason: string; message: string; field?: string }[];
}

/** An error that becomes a `Status` body with HTTP status `code`. */
export class K8sError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }
}

/** The `metav1.Status` of a failed request. */
export function failureStatus(error: K8sError): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: error.message,
    reason: error.reason,
    ...(error.details ? { details: error.details } : {}),
    code: error.code,
  };
}

export function sendJson(response: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(code, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
  });
  response.end(text);
}

export function sendStatus(response: ServerResponse, error: K8sError): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  sendJson(response, error.code, failureStatus(error));
}

/** `pods "name" not found`, as the API server words it. */
export function notFound(resource: string, name: string): K8sError {
  return new K8sError(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });
}

export function alreadyExists(resource: string, name: string): K8sError {
  return new K8sError(409, 'AlreadyExists', `${resource} "${name}" already exists`, {
    name,
    kind: resource,
  });
}

export function badRequest(message: string): K8sError {
  return new K8sError(400, 'BadRequest', message);
}

/** A 422 for one invalid field, e.g. `Pod "X" is invalid: metadata.name: Invalid value: …`. */
export function invalid(kind: string, name: string, field: string, problem: string): K8sError {
  const message = `${field}: ${problem}`;
  return new K8sError(422, 'Invalid', `${kind} "${name}" is invalid: ${message}`, {
    name,
    kind: kind.toLowerCase() === 'persistentvolumeclaim' ? 'PersistentVolumeClaim' : kind,
    causes: [{ reason: 'FieldValueInvalid', message, field }],
  });
}

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const LABEL = new RegExp(`^${DNS_LABEL}$`);

/** Throws 422 unless `name` is an RFC 1123 subdomain (or, with `label`, an RFC 1123 label). */
export function checkName(kind: string, name: string, label = false): void {
  const ok = label ? LABEL.test(name) && name.length <= 63 : SUBDOMAIN.test(name) && name.length <= 253;
  if (ok) return;
  const what = label ? 'RFC 1123 label' : 'RFC 1123 subdomain';
  throw invalid(
    kind,
    name,
    'metadata.name',
    `Invalid value: ${JSON.stringify(name)}: a lowercase ${what} must consist of lower case alphanumeric characters, '-'${label ? '' : " or '.'"}, and must start and end with an alphanumeric character`,
  );
}
