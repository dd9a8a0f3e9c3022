import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
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
