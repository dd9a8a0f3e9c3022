import fc from 'fast-check';
import { expect } from 'vitest';
import { MAX_BODY_BYTES } from '../../shared/http/request';

/**
 * fast-check building blocks for request bodies: any JSON, and objects made of a schema's own keys whose values are
 * sometimes plausible, sometimes anything at all, with the odd unexpected key (including prototype names).
 */

/** Keys that must be refused as unknown, not treated as object internals. */
const STRANGE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', '', 'URL', 'Width'];

/** Any key the schema does not know, including prototype names and near-misses of real field names. */
const unknownKey = fc.oneof(fc.constantFrom(...STRANGE_KEYS), fc.string());

/** Adds one own property, as JSON.parse would (so `__proto__` becomes a key, not the prototype). */
function withKey(record: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...record };
  Object.defineProperty(copy, key, { value, enumerable: true, configurable: true, writable: true });
  return copy;
}

/** Objects of `valid` with one unknown key added (which a strict schema must refuse). */
export function withUnknownKey(valid: fc.Arbitrary<Record<string, unknown>>, known: string[]) {
  return fc
    .tuple(
      valid,
      unknownKey.filter((key) => !known.includes(key)),
      fc.jsonValue(),
    )
    .map(([record, key, value]) => withKey(record, key, value));
}

/** An object with any subset of `fields`; each present value is the field's own kind of value or any JSON. */
export function objectFrom(
  fields: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  const loose = Object.fromEntries(
    Object.entries(fields).map(([key, plausible]) => [
      key,
      fc.oneof({ weight: 4, arbitrary: plausible }, fc.jsonValue()),
    ]),
  );
  // One object in five gets a key the schema does not know.
  const extra = fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    fc.tuple(
      unknownKey.filter((key) => !Object.hasOwn(fields, key)),
      fc.jsonValue(),
    ),
  );
  return fc
    .tuple(fc.record(loose, { requiredKeys: [] }), extra)
    .map(([record, added]) => (added ? withKey(record, added[0], added[1]) : record));
}

/** Integers around the edges of [min, max], and numbers that are not integers. */
export function numberNear(min: number, max: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.constantFrom(min - 1, min, min + 1, max - 1, max, max + 1, 0, -1, 0.5, min + 0.5, 1e21, -1e21),
    fc.integer({ min: min - 10, max: max + 10 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );
}

/** Well-formed JSON text of a value, or text that is not JSON at all. */
export function bodyText(value: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: value.map((v) => JSON.stringify(v)) },
    fc.string(),
    value.map((v) => JSON.stringify(v).slice(0, -1)),
    fc.constantFrom('', ' ', 'null', '[]', '{', '{"url":}', '\u0000', '{"a":1}{"b":2}'),
  );
}

/** What the spec's 400 promises: a message field and details, each with code, path and message. */
export function expectValidationBody(body: unknown, messageField: 'error' | 'message'): void {
  expect(body).toEqual({ [messageField]: expect.any(String), details: expect.any(Array) });
  const details = (body as { details: unknown[] }).details;
  expect(details.length).toBeGreaterThan(0);
  for (const detail of details) {
    expect(detail).toEqual({
      code: expect.any(String),
      path: expect.any(Array),
      message: expect.any(String),
    });
    for (const segment of (detail as { path: unknown[] }).path)
      expect(['string', 'number']).toContain(typeof segment);
  }
}

/** The checks every answer gets: never a 5xx, and an oversized body is a 413. True when the body was oversized. */
export function expectNoServerError(text: string, status: number): boolean {
  expect(status).toBeLessThan(500);
  if (Buffer.byteLength(text) <= MAX_BODY_BYTES) return false;
  expect(status).toBe(413);
  return true;
}

/** JSON.parse, or undefined when the text is not JSON. */
export function parsedOrUndefined(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
