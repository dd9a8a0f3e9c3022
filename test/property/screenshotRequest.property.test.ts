import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshotRequest } from '../../shared/screenshot/schema';
import {
  bodyText,
  expectNoServerError,
  expectValidationBody,
  isPlainObject,
  numberNear,
  objectFrom,
  parsedOrUndefined,
  withUnknownKey,
} from '../helpers/arbitraries';
import { type ScreenshotHarness, startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Any body sent to POST /api/screenshot through the real handler ends in a capture request or a well-formed 400,
 * never a 5xx. The account holds no credits, so a request that passes validation stops at 402 (whose `required` is
 * the request's cost) instead of launching a capture: that keeps hundreds of cases fast and still proves the whole
 * path up to the capture.
 */
let harness: ScreenshotHarness;
let apiKey: string;

beforeAll(async () => {
  harness = await startScreenshotHarness({ FREE_CREDITS: '0', RATE_LIMIT_PER_HOUR: '1000000000' });
  ({ apiKey } = await harness.newAccount());
});

afterAll(() => harness?.close());

const FIELDS = ['url', 'width', 'height', 'format', 'quality', 'fullPage', 'device', 'delay'];
const PRESETS: Record<string, [number, number]> = {
  mobile: [390, 844],
  tablet: [768, 1024],
  desktop: [1920, 1080],
};
const isIntIn = (value: unknown, min: number, max: number) =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
const optional = (value: unknown, valid: (v: unknown) => boolean) => value === undefined || valid(value);

/** The spec's field rules (2.1), written out independently of the zod schema; only URL syntax is left to it. */
function isValidRequest(body: unknown): body is Record<string, unknown> {
  if (!isPlainObject(body)) return false;
  if (Object.keys(body).some((key) => !FIELDS.includes(key))) return false;
  return (
    typeof body.url === 'string' &&
    body.url.length <= 2048 &&
    screenshotRequest.shape.url.safeParse(body.url).success &&
    optional(body.width, (v) => isIntIn(v, 320, 3840)) &&
    optional(body.height, (v) => isIntIn(v, 320, 3840)) &&
    optional(body.format, (v) => v === 'png' || v === 'jpeg' || v === 'webp') &&
    optional(body.quality, (v) => isIntIn(v, 1, 100)) &&
    optional(body.fullPage, (v) => typeof v === 'boolean') &&
    optional(body.device, (v) => typeof v === 'string' && Object.hasOwn(PRESETS, v)) &&
    optional(body.delay, (v) => isIntIn(v, 0, 30_000))
  );
}

/** The cost table (spec 8, docs/api.md): 3 above 2560 px after any preset, else 2 for full page, else 1. */
function expectedCost(request: Record<string, unknown>): number {
  const [width, height] =
    typeof request.device === 'string'
      ? (PRESETS[request.device] as [number, number])
      : [(request.width as number | undefined) ?? 1920, (request.height as number | undefined) ?? 1080];
  if (width > 2560 || height > 2560) return 3;
  return request.fullPage === true ? 2 : 1;
}

/** Hosts that need no DNS from the internet: literal addresses (public and private) and a reserved name. */
const host = fc.constantFrom(
  '93.184.216.34',
  '8.8.8.8',
  '10.0.0.1',
  '127.0.0.1',
  '[::1]',
  '[2606:4700::1111]',
  'x.invalid',
);
const validUrl = fc
  .tuple(fc.constantFrom('http', 'https'), host, fc.webPath(), fc.webQueryParameters())
  .map(([scheme, h, path, query]) => `${scheme}://${h}${path}${query ? `?${query}` : ''}`);
const url = fc.oneof(
  validUrl,
  fc
    .tuple(fc.constantFrom('HTTP', 'ftp', 'file', 'javascript', 'data', 'ws'), host, fc.webPath())
    .map(([scheme, h, path]) => `${scheme}://${h}${path}`),
  fc.constantFrom('', 'http://', 'https://', '//8.8.8.8/', 'not a url', `http://8.8.8.8/${'a'.repeat(2050)}`),
  fc.string(),
);

/** Per field: values near what the spec allows, valid and not. */
const fieldValues: Record<string, fc.Arbitrary<unknown>> = {
  url,
  width: numberNear(320, 3840),
  height: numberNear(320, 3840),
  format: fc.constantFrom('png', 'jpeg', 'webp', 'PNG', 'gif', ''),
  quality: numberNear(1, 100),
  fullPage: fc.oneof(fc.boolean(), fc.constantFrom('true', 0, 1)),
  device: fc.constantFrom('mobile', 'tablet', 'desktop', 'Mobile', 'watch'),
  delay: numberNear(0, 30_000),
};

/** Requests the spec allows, with any mix of optional fields. */
const validRequest = fc.record(
  {
    url: validUrl,
    width: fc.integer({ min: 320, max: 3840 }),
    height: fc.integer({ min: 320, max: 3840 }),
    format: fc.constantFrom('png', 'jpeg', 'webp'),
    quality: fc.integer({ min: 1, max: 100 }),
    fullPage: fc.boolean(),
    device: fc.constantFrom('mobile', 'tablet', 'desktop'),
    delay: fc.integer({ min: 0, max: 30_000 }),
  },
  { requiredKeys: ['url'] },
);

/** A valid request with one field swapped for a value near (or far from) the rules. */
const nearMiss = fc
  .tuple(validRequest, fc.constantFrom(...FIELDS))
  .chain(([request, field]) =>
    fc
      .oneof(fieldValues[field] as fc.Arbitrary<unknown>, fc.jsonValue())
      .map((value) => ({ ...request, [field]: value })),
  );

const requestLike = fc.oneof(
  validRequest,
  nearMiss,
  withUnknownKey(validRequest, FIELDS),
  objectFrom(fieldValues),
);

/** Sends the text as the body and checks the answer against the rules above. */
async function checkAnswer(text: string): Promise<void> {
  const response = await harness.shoot(apiKey, text);
  if (expectNoServerError(text, response.status)) return;
  const body = response.json();
  const parsed = parsedOrUndefined(text);
  if (parsed && isValidRequest(parsed.value)) {
    // Valid: either it reached the credit check, or the URL's host was refused by the egress policy.
    if (response.status === 402) {
      expect(body).toEqual({ error: expect.any(String), required: expectedCost(parsed.value), available: 0 });
      return;
    }
    expect(response.status).toBe(400);
    expectValidationBody(body, 'error');
    expect(body.details?.map((detail) => detail.code)).toEqual(['url_not_allowed']);
    return;
  }
  expect(response.status).toBe(400);
  expectValidationBody(body, 'error');
}

describe('the screenshot route, for any body', () => {
  it('answers any JSON value with a well-formed 400, or 402 when it is a valid request', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), (value) => checkAnswer(JSON.stringify(value))),
      { numRuns: 100 },
    );
  });

  it('answers objects built from the request fields exactly as the spec rules say', async () => {
    await fc.assert(
      fc.asyncProperty(requestLike, (value) => checkAnswer(JSON.stringify(value))),
      { numRuns: 250 },
    );
  });

  it('answers text that is not JSON, or is cut short, with a well-formed 400', async () => {
    await fc.assert(fc.asyncProperty(bodyText(requestLike), checkAnswer), { numRuns: 100 });
  });
});
