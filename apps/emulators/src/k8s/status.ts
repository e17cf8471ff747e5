import type { ServerResponse } from 'node:http';
import type { V1Status } from '@kubernetes/client-node';
import type { K8sLimits } from './limits.js';
import type { Wire } from './wire.js';

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
  | 'RequestEntityTooLarge'
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
    /** Response headers to send with it (`Retry-After`). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
  }
}

/** The `metav1.Status` of a failed request. */
export function failureStatus(error: K8sError): Wire<V1Status> {
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

export function sendJson(
  response: ServerResponse,
  code: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(code, {
    ...headers,
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
  sendJson(response, error.code, failureStatus(error), error.headers);
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
/** A label value, or the name part of a label key. */
const QUALIFIED = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** The limits object metadata is held to (see {@link K8sLimits}). */
export type MetadataLimits = Pick<K8sLimits, 'nameChars' | 'labelValueChars' | 'annotationsBytes'>;

/**
 * Throws 422 unless `name` is an RFC 1123 subdomain of at most `maxChars` (or, with `label`, an RFC
 * 1123 label of at most 63), as the API server's name validation words it.
 */
export function checkName(kind: string, name: string, label = false, maxChars = 253): void {
  const max = label ? Math.min(63, maxChars) : maxChars;
  const field = 'metadata.name';
  if (name.length > max)
    throw invalid(
      kind,
      name,
      field,
      `Invalid value: ${JSON.stringify(name)}: must be no more than ${max} characters`,
    );
  if (label ? LABEL.test(name) : SUBDOMAIN.test(name)) return;
  const what = label ? 'RFC 1123 label' : 'RFC 1123 subdomain';
  throw invalid(
    kind,
    name,
    field,
    `Invalid value: ${JSON.stringify(name)}: a lowercase ${what} must consist of lower case alphanumeric characters, '-'${label ? '' : " or '.'"}, and must start and end with an alphanumeric character`,
  );
}

/** Throws 422 for a label key or value the API server refuses (a value: up to `labelValueChars`). */
function checkLabels(
  kind: string,
  name: string,
  labels: Readonly<Record<string, string>>,
  limits: MetadataLimits,
): void {
  for (const [key, value] of Object.entries(labels)) {
    const slash = key.lastIndexOf('/');
    const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
    const own = slash >= 0 ? key.slice(slash + 1) : key;
    if (
      (prefix !== undefined && !(SUBDOMAIN.test(prefix) && prefix.length <= 253)) ||
      !QUALIFIED.test(own) ||
      own.length > 63
    )
      throw invalid(
        kind,
        name,
        'metadata.labels',
        `Invalid value: ${JSON.stringify(key)}: name part must consist of alphanumeric characters, '-', '_' or '.', must start and end with an alphanumeric character, and must be no more than 63 characters`,
      );
    if (value.length > limits.labelValueChars)
      throw invalid(
        kind,
        name,
        'metadata.labels',
        `Invalid value: ${JSON.stringify(value)}: must be no more than ${limits.labelValueChars} characters`,
      );
    if (value !== '' && !QUALIFIED.test(value))
      throw invalid(
        kind,
        name,
        'metadata.labels',
        `Invalid value: ${JSON.stringify(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      );
  }
}

/**
 * Throws 422 as the API server's object-metadata validation does: the name (see {@link checkName}),
 * the labels, and the annotations' total size (keys and values) over `annotationsBytes`.
 */
export function checkMetadata(
  kind: string,
  metadata: {
    name: string;
    labels: Readonly<Record<string, string>>;
    annotations: Readonly<Record<string, string>>;
  },
  limits: MetadataLimits,
  label = false,
): void {
  checkName(kind, metadata.name, label, limits.nameChars);
  checkLabels(kind, metadata.name, metadata.labels, limits);
  let size = 0;
  for (const [key, value] of Object.entries(metadata.annotations))
    size += Buffer.byteLength(key) + Buffer.byteLength(value);
  if (size > limits.annotationsBytes)
    throw invalid(
      kind,
      metadata.name,
      'metadata.annotations',
      `Too long: must have at most ${limits.annotationsBytes} bytes`,
    );
}
