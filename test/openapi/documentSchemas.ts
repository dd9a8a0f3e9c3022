import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';
import { openApiDocument } from '../../shared/openapi/document';

/**
 * The API description, checked by the OpenAPI validator, with its $refs resolved, and a JSON Schema 2020-12
 * validator (Ajv, which OpenAPI 3.1 schemas are) for the request and response schemas inside it.
 */
export interface DescribedApi {
  /** The document with every $ref replaced by what it points at. */
  resolved: Json;
  /** Validates `value` against a schema of the document; returns the problems, empty when valid. */
  check(schema: unknown, value: unknown): string[];
  operation(method: string, path: string): Json;
}

// Test code reads the document freely; the validator above has already checked its shape.
// biome-ignore lint/suspicious/noExplicitAny: a parsed JSON document
export type Json = any;

/** Replaces each local `{ "$ref": "#/..." }` with its target (the document has no cycles). */
function resolveRefs(node: Json, root: Json): Json {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(item, root));
  if (node === null || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string' && node.$ref.startsWith('#/')) {
    const target = node.$ref
      .slice(2)
      .split('/')
      .reduce((at: Json, part: string) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], root);
    if (target === undefined) throw new Error(`unresolved ${node.$ref}`);
    return resolveRefs(target, root);
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, resolveRefs(value, root)]));
}

export async function describedApi(): Promise<DescribedApi> {
  const document = JSON.parse(JSON.stringify(openApiDocument()));
  const result = await new Validator().validate(structuredClone(document));
  if (!result.valid) throw new Error(`invalid OpenAPI document: ${JSON.stringify(result.errors, null, 2)}`);
  const resolved = resolveRefs(document, document);

  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats(ajv);
  // OpenAPI's annotation keyword and the binary format carry no constraint for JSON values.
  ajv.addVocabulary(['example']);
  ajv.addFormat('binary', true);
  const compiled = new Map<unknown, ValidateFunction>();

  return {
    resolved,
    check(schema, value) {
      let validate = compiled.get(schema);
      if (!validate) {
        validate = ajv.compile(schema as object);
        compiled.set(schema, validate);
      }
      return validate(value)
        ? []
        : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    },
    operation(method, path) {
      const operation = resolved.paths?.[path]?.[method.toLowerCase()];
      if (!operation) throw new Error(`${method} ${path} is not described`);
      return operation;
    },
  };
}

/** Headers of the API's own whose presence means something: an answer that carries one must declare it. */
const MEANINGFUL_HEADERS = [
  'location',
  'retry-after',
  'etag',
  'x-credits-charged',
  'x-cache',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];

/**
 * Asserts the answer is one the document describes for this operation: its status, each required header there and
 * each meaningful header it carries declared, its body matching. Returns the parsed JSON body, if any.
 */
export async function expectDescribed(
  api: DescribedApi,
  method: string,
  path: string,
  response: Response,
): Promise<unknown> {
  const described = api.operation(method, path).responses[String(response.status)];
  expect(described, `${method} ${path} answered ${response.status}, which is not described`).toBeDefined();
  const declared = Object.entries<Json>(described.headers ?? {});
  for (const [name, header] of declared) {
    const value = response.headers.get(name);
    if (header.required) expect(value, `header ${name}`).not.toBeNull();
    if (value !== null && header.schema.type === 'integer') expect(value, `header ${name}`).toMatch(/^\d+$/);
  }
  const declaredNames = declared.map(([name]) => name.toLowerCase());
  for (const name of MEANINGFUL_HEADERS.filter((name) => response.headers.has(name))) {
    expect(declaredNames, `${method} ${path} ${response.status} carries ${name}, not declared`).toContain(
      name,
    );
  }
  if (described.content === undefined) {
    // An answer described without a body (a 304) has none.
    expect((await response.arrayBuffer()).byteLength).toBe(0);
    return undefined;
  }
  const type = (response.headers.get('content-type') ?? '').split(';')[0] ?? '';
  expect(Object.keys(described.content)).toContain(type);
  if (type !== 'application/json') return undefined;
  const body = await response.json();
  expect(api.check(described.content[type].schema, body)).toEqual([]);
  return body;
}
