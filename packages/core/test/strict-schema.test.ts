import { describe, expect, it } from 'vitest';
import { dropStrictNulls, strictJsonSchema } from '../src/backend.js';

const readSchema = {
  type: 'object',
  properties: {
    file_path: { type: 'string', description: 'Path.' },
    offset: { type: 'integer', minimum: 1, default: 1 },
    mode: { type: 'string', enum: ['a', 'b'] },
    tags: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
  },
  required: ['file_path'],
  additionalProperties: false,
};

describe('strictJsonSchema', () => {
  it('requires every property, makes the optional ones nullable and drops default', () => {
    expect(strictJsonSchema(readSchema)).toEqual({
      type: 'object',
      properties: {
        file_path: { type: 'string', description: 'Path.' },
        offset: { type: ['integer', 'null'], minimum: 1 },
        mode: { type: ['string', 'null'], enum: ['a', 'b', null] },
        tags: {
          type: ['array', 'null'],
          items: {
            type: 'object',
            properties: { name: { type: ['string', 'null'] } },
            required: ['name'],
            additionalProperties: false,
          },
        },
      },
      required: ['file_path', 'offset', 'mode', 'tags'],
      additionalProperties: false,
    });
  });

  it('gives up on what strict mode cannot express', () => {
    expect(strictJsonSchema({ type: 'object', additionalProperties: { type: 'string' } })).toBeUndefined();
    expect(
      strictJsonSchema({ type: 'object', properties: { a: { oneOf: [{ type: 'string' }] } } }),
    ).toBeUndefined();
    expect(strictJsonSchema({ $ref: '#/$defs/x' })).toBeUndefined();
  });
});

describe('dropStrictNulls', () => {
  it('drops the nulls that stand for absent optional properties, nested too, and keeps the others', () => {
    const schema = {
      ...readSchema,
      properties: { ...readSchema.properties, note: { type: ['string', 'null'] } },
    };
    expect(
      dropStrictNulls(
        { file_path: 'a', offset: null, mode: null, note: null, tags: [{ name: null }, { name: 'x' }] },
        schema,
      ),
    ).toEqual({ file_path: 'a', note: null, tags: [{}, { name: 'x' }] });
    expect(dropStrictNulls({ file_path: null }, readSchema)).toEqual({ file_path: null });
  });
});
