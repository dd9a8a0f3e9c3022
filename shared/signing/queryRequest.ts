import type { z } from 'zod';

/**
 * Query parameters as a request body: each value is a string in the URL, and becomes what the request schema's
 * field takes, decided from the schema's own shape (so a field added to the schema needs nothing here). Numbers and
 * booleans are read strictly (`800`, `1.5`, `true`, `false`; not `1e3`, `+5`, ` 8`, `yes`); objects and arrays are
 * JSON in one parameter. A value that does not read as its field's type stays a string and the schema refuses it
 * with a 400 naming the field, as it refuses unknown names.
 */
export function requestFromQuery(
  schema: z.ZodObject,
  query: Readonly<Record<string, string>>,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => {
      // Own fields only: a name like `constructor` is no field, whatever the shape object inherits.
      const field = Object.hasOwn(schema.shape, name) ? schema.shape[name] : undefined;
      return [name, field ? fromText(value, kindsOf(field)) : value];
    }),
  );
}

type Kind = 'string' | 'number' | 'boolean' | 'json';

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

function fromText(value: string, kinds: ReadonlySet<Kind>): unknown {
  if (kinds.has('number') && NUMBER.test(value)) return Number(value);
  if (kinds.has('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  if (kinds.has('json') && /^[[{]/.test(value)) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

/** The zod definition fields this walk reads; every other property is irrelevant to it. */
interface Definition {
  type: string;
  innerType?: SchemaLike;
  in?: SchemaLike;
  options?: readonly SchemaLike[];
  values?: readonly unknown[];
  entries?: Record<string, unknown>;
  getter?: () => SchemaLike;
}
interface SchemaLike {
  _zod: { def: unknown };
}

/** The JSON kinds a value of the schema can have, through wrappers (optional, default, pipe, ...) and unions. */
function kindsOf(schema: SchemaLike): Set<Kind> {
  const def = schema._zod.def as Definition;
  switch (def.type) {
    case 'string':
    case 'template_literal':
      return new Set(['string']);
    case 'number':
    case 'int':
    case 'bigint':
      return new Set(['number']);
    case 'boolean':
      return new Set(['boolean']);
    case 'object':
    case 'record':
    case 'array':
    case 'tuple':
    case 'map':
    case 'set':
      return new Set(['json']);
    case 'literal':
      return kindsOfValues(def.values ?? []);
    case 'enum':
      return kindsOfValues(Object.values(def.entries ?? {}));
    case 'union':
      return new Set((def.options ?? []).flatMap((option) => [...kindsOf(option)]));
    case 'pipe':
      return def.in ? kindsOf(def.in) : new Set(['string']);
    case 'lazy':
      return def.getter ? kindsOf(def.getter()) : new Set(['string']);
    default:
      // optional, default, prefault, nullable, readonly, catch, nonoptional: the wrapped schema decides.
      return def.innerType ? kindsOf(def.innerType) : new Set(['string']);
  }
}

function kindsOfValues(values: readonly unknown[]): Set<Kind> {
  return new Set(
    values.map((value): Kind => {
      if (typeof value === 'number') return 'number';
      if (typeof value === 'boolean') return 'boolean';
      return 'string';
    }),
  );
}
