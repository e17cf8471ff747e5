/**
 * True when a tool's parameters meet the rules OpenAI's strict mode sets for objects: every object
 * schema, nested ones included, lists all its properties in `required` and sets
 * `additionalProperties: false`. The SDK's own conversion guarantees this for objects that declare
 * properties; an object without them (a free-form map) stays open, and the API would refuse it.
 */
export function isStrictSchema(schema: unknown): boolean {
  const seen = new Set<object>();
  const pending: unknown[] = [schema];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || seen.has(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) {
      pending.push(...node);
      continue;
    }
    const record = node as Record<string, unknown>;
    if (isObjectSchema(record)) {
      if (record.additionalProperties !== false) return false;
      const properties = isRecord(record.properties) ? Object.keys(record.properties) : [];
      const required = Array.isArray(record.required) ? record.required : [];
      if (!properties.every((key) => required.includes(key))) return false;
    }
    pending.push(record.items, record.anyOf);
    if (isRecord(record.properties)) pending.push(...Object.values(record.properties));
    if (isRecord(record.$defs)) pending.push(...Object.values(record.$defs));
    if (isRecord(record.definitions)) pending.push(...Object.values(record.definitions));
  }
  return true;
}

function isObjectSchema(schema: Record<string, unknown>): boolean {
  const type = schema.type;
  return type === 'object' || (Array.isArray(type) && type.includes('object')) || 'properties' in schema;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
