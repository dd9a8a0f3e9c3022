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
 * POST /api/keys: `name` only, a string of 1 to 100 characters after trimming, with no control character, no line or
 * paragraph separator or interlinear annotation control, no default-ignorable character but the joiners, the
 * variation selectors and an emoji flag's tags, no lone surrogate or U+FFFD, at least one character that draws
 * something, no more than four combining marks in a row and no two variation selectors in a row.
 */
function isValidCreate(body: unknown): body is { name: string } {
  if (!isPlainObject(body) || !onlyKeys(body, ['name']) || typeof body.name !== 'string') return false;
  const trimmed = body.name.trim();
  const chars = [...trimmed];
  const codes = chars.map((char) => char.codePointAt(0) ?? 0);
  const flagTags = flagTagPositions(codes);
  const selectors = chars.map((char) => /\p{Variation_Selector}/u.test(char));
  const unsafe = codes.some(
    (code, i) =>
      code < 0x20 ||
      (code >= 0x7f && code <= 0x9f) ||
      [0x2028, 0x2029, 0xfff9, 0xfffa, 0xfffb].includes(code) ||
      (/\p{Default_Ignorable_Code_Point}/u.test(chars[i] ?? '') &&
        code !== 0x200c &&
        code !== 0x200d &&
        !selectors[i] &&
        !flagTags.has(i)),
  );
  const marks = chars.map((char) => /\p{M}/u.test(char));
  const stacked = marks.some((_, i) => marks.slice(i, i + 5).filter(Boolean).length === 5);
  const twoSelectors = selectors.some((selector, i) => selector && selectors[i + 1]);
  const blank = [0x115f, 0x1160, 0x2800, 0x3164, 0xffa0];
  const visible = chars.some(
    (char) => !/[\p{M}\p{Cf}\p{Z}\s]/u.test(char) && !blank.includes(char.codePointAt(0) ?? 0),
  );
  const wellFormed = codes.every((code) => (code < 0xd800 || code > 0xdfff) && code !== 0xfffd);
  return (
    trimmed.length >= 1 &&
    trimmed.length <= 100 &&
    !unsafe &&
    wellFormed &&
    visible &&
    !stacked &&
    !twoSelectors
  );
}

/** Where the tags of an emoji flag are: U+1F3F4, then 2 to 6 tag digits or small letters, then the cancel tag. */
function flagTagPositions(codes: number[]): Set<number> {
  const isRegionTag = (code = 0) =>
    (code >= 0xe0030 && code <= 0xe0039) || (code >= 0xe0061 && code <= 0xe007a);
  const tags = new Set<number>();
  codes.forEach((code, start) => {
    if (code !== 0x1f3f4) return;
    let end = start + 1;
    while (isRegionTag(codes[end])) end += 1;
    const length = end - start - 1;
    if (length >= 2 && length <= 6 && codes[end] === 0xe007f)
      for (let i = start + 1; i <= end; i += 1) tags.add(i);
  });
  return tags;
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
      'prod\u206A',
      'prod\u3164',
      'bad\uFFFD',
      'a\uFE0F',
      'a\uFE0F\uFE0F',
      '\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}',
      '\u{1F3F4}\u{E0067}\u{E0062}',
      'x\u{E0067}\u{E007F}',
      `\u{1F3F4}${String.fromCodePoint(...[...'ignore all'].map((c) => 0xe0000 + c.charCodeAt(0)))}\u{E007F}`,
      '\u0600\u0661\u0662',
      '\u1820\u180B\u180C',
      '\u1820\u180B',
      'a\u034Fb',
      'a\uFFF9b',
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
