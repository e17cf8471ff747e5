import type { JsonSchema } from '../contracts/tool.js';

type Schema = Record<string, unknown>;

// Keywords a strict-mode provider (OpenAI structured outputs) does not take; everything else passes.
const DROPPED = new Set(['default', 'examples', '$schema']);
// Keywords strict mode cannot express: a schema holding one stays non-strict.
const UNSUPPORTED = new Set([
  '$ref',
  'oneOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'patternProperties',
  'dependentSchemas',
  'dependentRequired',
  'unevaluatedProperties',
  'propertyNames',
]);

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A tool's input schema rewritten for the strict mode of function calling (OpenAI's `strict: true`,
 * which the Vercel AI SDK and LangChain pass on): every object lists all its properties in `required`
 * and forbids others, an optional property also accepts `null` (its "absent"), and keywords strict
 * mode refuses (`default`, `examples`) are dropped. `undefined` when the schema cannot be made strict
 * (an open object, `$ref`, `oneOf`…): the tool then stays non-strict. Pure. Framework adapters use it
 * with {@link dropStrictNulls}.
 */
export function strictJsonSchema(schema: JsonSchema): JsonSchema | undefined {
  return rewrite(schema);
}

function rewrite(schema: unknown): Schema | undefined {
  if (!isSchema(schema)) return undefined;
  const output: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (UNSUPPORTED.has(key)) return undefined;
    if (DROPPED.has(key)) continue;
    output[key] = value;
  }
  if (isObjectSchema(schema)) {
    if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return undefined;
    const properties = isSchema(schema.properties) ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const rewritten: Schema = {};
    for (const [name, property] of Object.entries(properties)) {
      const strict = rewrite(property);
      if (!strict) return undefined;
      rewritten[name] = required.has(name) ? strict : nullable(strict);
    }
    output.properties = rewritten;
    output.required = Object.keys(rewritten);
    output.additionalProperties = false;
  }
  if (schema.items !== undefined) {
    const items = rewrite(schema.items);
    if (!items) return undefined;
    output.items = items;
  }
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf)) return undefined;
    const branches = schema.anyOf.map(rewrite);
    if (branches.some((branch) => branch === undefined)) return undefined;
    output.anyOf = branches;
  }
  return output;
}

function isObjectSchema(schema: Schema): boolean {
  return schema.type === 'object' || (schema.type === undefined && isSchema(schema.properties));
}

function nullable(schema: Schema): Schema {
  if (allowsNull(schema)) return schema;
  if (typeof schema.type === 'string' || Array.isArray(schema.type)) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const output: Schema = { ...schema, type: [...types, 'null'] };
    if (Array.isArray(schema.enum)) output.enum = [...schema.enum, null];
    return output;
  }
  const { description, ...rest } = schema;
  return {
    anyOf: [rest, { type: 'null' }],
    ...(description === undefined ? {} : { description }),
  };
}

function allowsNull(schema: unknown): boolean {
  if (!isSchema(schema)) return false;
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true;
  if (Array.isArray(schema.enum) && schema.enum.includes(null)) return true;
  return Array.isArray(schema.anyOf) && schema.anyOf.some(allowsNull);
}

/**
 * Removes the `null`s strict mode made the model send for properties it left out, so the tool sees
 * them absent, as its own schema wants. A `null` the original schema allows is kept. Returns a copy.
 */
export function dropStrictNulls(value: unknown, schema: JsonSchema): unknown {
  if (Array.isArray(value)) {
    const items = schema.items;
    return isSchema(items) ? value.map((item) => dropStrictNulls(item, items)) : value;
  }
  if (!isSchema(value) || !isSchema(schema.properties)) return value;
  const properties = schema.properties;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const output: Schema = {};
  for (const [name, item] of Object.entries(value)) {
    const property = properties[name];
    if (item === null && !required.has(name) && !allowsNull(property)) continue;
    output[name] = isSchema(property) ? dropStrictNulls(item, property) : item;
  }
  return output;
}
