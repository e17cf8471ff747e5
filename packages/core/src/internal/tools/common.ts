import { isWsError } from '../../contracts/errors.js';
import type { CompleteSandbox } from '../../contracts/sandbox.js';
import type { JsonSchema, ToolContent, ToolResult } from '../../contracts/tool.js';
import type { ReadCache } from './read-cache.js';
import type { SearchTools } from './search-tools.js';

/** What every built-in tool works with. The sandbox is looked up per call, so a reconnect is seen. */
export interface ToolEnvironment {
  /** The live sandbox; throws `DISPOSED`/`NOT_READY` when there is none. */
  sandbox(): CompleteSandbox;
  /** The workdir inside the sandbox. */
  readonly workdir: string;
  /** The read-before-edit cache of the agent the tools belong to. */
  readonly readCache: ReadCache;
  /** Which search programs the sandbox has (ripgrep or the POSIX fallback). */
  readonly search: SearchTools;
  /** Media types the model accepts as input: Read returns these as images or documents. */
  readonly modelInputTypes: readonly string[];
}

/** A successful result holding one text item. */
export function textResult(text: string, metadata?: Record<string, unknown>): ToolResult {
  return metadata
    ? { content: [{ type: 'text', text }], isError: false, metadata }
    : { content: [{ type: 'text', text }], isError: false };
}

/** A failed result holding one text item: what the model reads when a call went wrong. */
export function errorResult(text: string, metadata?: Record<string, unknown>): ToolResult {
  return metadata
    ? { content: [{ type: 'text', text }], isError: true, metadata }
    : { content: [{ type: 'text', text }], isError: true };
}

/** A result with several content items. */
export function contentResult(content: ToolContent[], metadata?: Record<string, unknown>): ToolResult {
  return metadata ? { content, isError: false, metadata } : { content, isError: false };
}

/**
 * Rethrows what the caller must see as an exception (a disposed workspace, an abort), and turns every
 * other failure into an error result the model can read.
 */
export function failureResult(error: unknown, prefix: string): ToolResult {
  if (
    isWsError(error) &&
    (error.code === 'ABORTED' || error.code === 'DISPOSED' || error.code === 'NOT_READY')
  )
    throw error;
  const message = error instanceof Error ? error.message : String(error);
  return errorResult(`${prefix}${message}`);
}

type PropertySchema = {
  type?: string;
  minimum?: number;
  maximum?: number;
  enum?: readonly unknown[];
  items?: PropertySchema;
};

/**
 * Checks `input` against the subset of JSON Schema the built-in tools use (object with typed
 * properties, `required`, `minimum`/`maximum`, `enum`). Returns an error message, or undefined when
 * the input is valid. Unknown properties are ignored, as models sometimes add them.
 */
export function checkInput(schema: JsonSchema, input: unknown): string | undefined {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    return 'Error: the tool input must be a JSON object';
  const record = input as Record<string, unknown>;
  const properties = (schema.properties ?? {}) as Record<string, PropertySchema>;
  for (const name of (schema.required ?? []) as string[]) {
    if (record[name] === undefined || record[name] === null)
      return `Error: missing required parameter \`${name}\``;
  }
  for (const [name, value] of Object.entries(record)) {
    const property = properties[name];
    if (!property || value === undefined || value === null) continue;
    const problem = checkValue(property, value);
    if (problem) return `Error: parameter \`${name}\` ${problem}`;
  }
  return undefined;
}

function checkValue(property: PropertySchema, value: unknown): string | undefined {
  switch (property.type) {
    case 'string':
      if (typeof value !== 'string') return 'must be a string';
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return 'must be a boolean';
      break;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) return 'must be an integer';
      break;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
      break;
  }
  if (typeof value === 'number') {
    if (property.minimum !== undefined && value < property.minimum)
      return `must be at least ${property.minimum}`;
    if (property.maximum !== undefined && value > property.maximum)
      return `must be at most ${property.maximum}`;
  }
  if (property.enum && !property.enum.includes(value))
    return `must be one of ${property.enum.map((item) => JSON.stringify(item)).join(', ')}`;
  return undefined;
}
