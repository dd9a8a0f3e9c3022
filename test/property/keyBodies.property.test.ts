import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bodyText,
  expectNoServerError,
  expectValidationBody,
  isPlainObject,
  objectFrom,
  parsedOrUndefined,
} from '../helpers/arbitraries';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Any body sent to the key-management routes through the real handlers is either acted on or refused with a
 * well-formed 400 (`message` plus `details`), never a 5xx. The expected verdict comes from the rules in
 * docs/api.md, written out here, not from the zod schemas.
 */
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  harness = await startScreenshotHarness();
  account = await harness.newAccount();
});

afterAll(() => harness?.close());

const onlyKeys = (value: Record<string, unknown>, allowed: string[]) =>
  Object.keys(value).every((key) => allowed.includes(key));

/**
 * POST /api/keys: `name` only, a string of 1 to 100 characters after trimming, with no control character, no
 * bidirectional formatting character and no invisible one, at least one character that draws something, and no more
 * than four combining marks in a row.
 */
function isValidCreate(body: unknown): body is { name: string } {
  if (!isPlainObject(body) || !onlyKeys(body, ['name']) || typeof body.name !== 'string') return false;
  const trimmed = body.name.trim();
  const unsafe = [...trimmed].some((char) => {
    const code = char.codePointAt(0) ?? 0;
    return (
      code < 0x20 ||
      (code >= 0x7f && code <= 0x9f) ||
      [0x00ad, 0x061c, 0x180e, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff].includes(code) ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2060 && code <= 0x2064) ||
      (code >= 0x2066 && code <= 0x2069)
    );
  });
  const marks = [...trimmed].map((char) => /\p{M}/u.test(char));
  const stacked = marks.some((_, i) => marks.slice(i, i + 5).filter(Boolean).length === 5);
  const blank = [0x115f, 0x1160, 0x2800, 0x3164, 0xffa0];
  const visible = [...trimmed].some(
    (char) => !/[\p{M}\p{Cf}\p{Z}\s]/u.test(char) && !blank.includes(char.codePointAt(0) ?? 0),
  );
  const wellFormed = [...trimmed].every((char) => {
    const code = char.codePointAt(0) ?? 0;
    return code < 0xd800 || code > 0xdfff;
  });
  return trimmed.length >= 1 && trimmed.length <= 100 && !unsafe && wellFormed && visible && !stacked;
}

/** PATCH /api/keys/{id}: `isActive` only, a boolean. */
function isValidUpdate(body: unknown): body is { isActive: boolean } {
  return isPlainObject(body) && onlyKeys(body, ['isActive']) && typeof body.isActive === 'boolean';
}

const nameLike = objectFrom({
  name: fc.oneof(
    fc.string({ maxLength: 120 }),
    fc.string({ unit: 'grapheme', maxLength: 60 }),
    fc.constantFrom(
      '',
      ' ',
      '\t\n',
      ' x ',
      'a'.repeat(100),
      'a'.repeat(101),
      ` ${'a'.repeat(100)} `,
      'a\u202Eb',
      'a\tb',
      'prod\u200Bkey',
      '\u200D',
      `a${'\u0301'.repeat(4)}`,
      `a${'\u0301'.repeat(5)}`,
      '\u{E0041}\u{E0042}',
      'a\uD800b',
      '\u3164\u2800',
    ),
  ),
});
const updateLike = objectFrom({ isActive: fc.oneof(fc.boolean(), fc.constantFrom('false', 0, 1, null)) });

async function checkCreate(text: string): Promise<void> {
  const { status, body } = await harness.manage('createKey', { bearer: account.token, body: text });
  if (expectNoServerError(text, status)) return;
  const parsed = parsedOrUndefined(text);
  if (parsed && isValidCreate(parsed.value)) {
    expect(status).toBe(201);
    expect(body).toMatchObject({
      name: parsed.value.name.trim(),
      key: expect.stringMatching(/^sk_live_[0-9a-f]{40}$/),
    });
    // Keep the account under its 100-key limit, so every valid body can be created.
    const deleted = await harness.manage('deleteKey', {
      bearer: account.token,
      pathParameters: { id: body.id },
    });
    expect(deleted.status).toBe(200);
    return;
  }
  expect(status).toBe(400);
  expectValidationBody(body, 'message');
}

describe('POST /api/keys, for any body', () => {
  it('answers any JSON value with a well-formed 400, or creates the key when it is valid', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), (value) => checkCreate(JSON.stringify(value))),
      { numRuns: 100 },
    );
  });

  it('answers objects built from its fields exactly as the name rules say', async () => {
    await fc.assert(
      fc.asyncProperty(nameLike, (value) => checkCreate(JSON.stringify(value))),
      { numRuns: 120 },
    );
  });

  it('answers text that is not JSON, or is cut short, with a well-formed 400', async () => {
    await fc.assert(fc.asyncProperty(bodyText(nameLike), checkCreate), { numRuns: 100 });
  });
});

describe('PATCH /api/keys/{id}, for any body', () => {
  /** Well-formed, but no such key: a valid body gets past validation and stops at 404. */
  const missingId = `key_${'0'.repeat(9)}${'0'.repeat(12)}`;

  async function checkUpdateOfMissingKey(text: string): Promise<void> {
    const { status, body } = await harness.manage('updateKey', {
      bearer: account.token,
      pathParameters: { id: missingId },
      body: text,
    });
    if (expectNoServerError(text, status)) return;
    const parsed = parsedOrUndefined(text);
    if (parsed && isValidUpdate(parsed.value)) {
      expect(status).toBe(404);
      expect(body).toEqual({ message: expect.any(String) });
      return;
    }
    expect(status).toBe(400);
    expectValidationBody(body, 'message');
  }

  it('answers any JSON value with a well-formed 400, or reaches the key lookup when it is valid', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), (value) => checkUpdateOfMissingKey(JSON.stringify(value))),
      {
        numRuns: 100,
      },
    );
  });

  it('answers objects built from its fields, or text that is not JSON, as the rules say', async () => {
    await fc.assert(fc.asyncProperty(bodyText(updateLike), checkUpdateOfMissingKey), { numRuns: 150 });
  });

  it('follows the key through any sequence of bodies: revoked once, never reactivated', async () => {
    const { keyId } = await harness.addKey(account.token);
    let active = true;
    // Valid bodies often enough that the key does get revoked, and reactivation gets tried after that.
    const bodies = fc.oneof(bodyText(updateLike), fc.constantFrom('{"isActive":false}', '{"isActive":true}'));
    await fc.assert(
      fc.asyncProperty(bodies, async (text) => {
        const { status, body } = await harness.manage('updateKey', {
          bearer: account.token,
          pathParameters: { id: keyId },
          body: text,
        });
        if (expectNoServerError(text, status)) return;
        const parsed = parsedOrUndefined(text);
        if (!parsed || !isValidUpdate(parsed.value)) {
          expect(status).toBe(400);
          expectValidationBody(body, 'message');
          return;
        }
        if (parsed.value.isActive && !active) {
          expect(status).toBe(409);
          return;
        }
        expect(status).toBe(200);
        expect(body).toEqual({ success: true, message: expect.any(String) });
        if (!parsed.value.isActive) active = false;
      }),
      { numRuns: 150 },
    );
    expect(active).toBe(false);
  });
});
