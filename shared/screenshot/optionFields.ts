import { z } from 'zod';
import { CONTENT_FORMATS, WAIT_UNTIL } from '../capture/renderer';
import { utf8Text } from './outputFields';

/**
 * The capture options of the screenshot body beyond the basic fields (docs/api.md, "Capture options"): their bounds,
 * and their zod schemas, spread into the request schema. The OpenAPI text and docs/api.md quote these bounds.
 */

export const MAX_SELECTOR_LENGTH = 512;
export const SCALES = [1, 1.5, 2, 2.5, 3] as const;
/** `networkidle`: the page is ready once no request has been in flight for this long. */
export const NETWORK_IDLE_MS = 500;
export const MAX_USER_AGENT_LENGTH = 512;
export const MAX_HEADERS = 20;
export const MAX_HEADER_VALUE_LENGTH = 1024;
export const MAX_COOKIES = 50;
/** A browser keeps no cookie whose name and value together are longer than this. */
export const MAX_COOKIE_SIZE = 4096;
export const MAX_COOKIE_PATH_LENGTH = 1024;
/** Of `css` and of `js`, in bytes of UTF-8. */
export const MAX_INJECTED_BYTES = 32 * 1024;
export const MAX_HIDE_SELECTORS = 50;
export const MAX_HIDE_SELECTOR_LENGTH = 256;
export const MAX_TIME_ZONE_LENGTH = 64;
export const MAX_LOCALE_LENGTH = 64;

/**
 * Request headers a customer may not set: what the browser owns (`Host`, `Cookie`, `Content-Length`), the
 * hop-by-hop headers, and anything addressed to a proxy. Compared lower-case; `proxy-*` is matched by prefix.
 */
export const FORBIDDEN_HEADERS = [
  'host',
  'cookie',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
] as const;

/** RFC 7230 `token`: the characters a header (or cookie) name may have. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Printable ASCII, space and tab: no CR, LF or NUL that could end the header and start another. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
/** RFC 6265 cookie-octets: no space, double quote, comma, semicolon or backslash. */
const COOKIE_VALUE = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*$/;
/** An absolute path, without the semicolon that would end the cookie's attribute. */
const COOKIE_PATH = /^\/[\x21-\x3a\x3c-\x7e]*$/;
/** IANA zone ids are names such as `Europe/Paris` or `UTC`, not offsets such as `+01:00`. */
const ZONE_ID = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

export function isForbiddenHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return (FORBIDDEN_HEADERS as readonly string[]).includes(lower) || lower.startsWith('proxy-');
}

/**
 * The zone as Chromium takes it, or undefined when ICU does not know it. ICU's own canonical id, whatever case or
 * link was given (`europe/paris` → `Europe/Paris`, `US/Eastern` → `America/New_York`): Chromium refuses ids in
 * another case. ICU's canonical names can be older than IANA's (`Asia/Calcutta` for `Asia/Kolkata`), and both are
 * the same zone.
 */
export function canonicalTimeZone(zone: string): string | undefined {
  if (!ZONE_ID.test(zone)) return undefined;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/**
 * The tag's canonical BCP 47 form (`en-us` → `en-US`), or undefined when it is not a well-formed tag or names no
 * language: Chromium refuses `und` (undetermined), with or without a region or script.
 */
export function canonicalLocale(tag: string): string | undefined {
  let canonical: string | undefined;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0];
  } catch {
    return undefined;
  }
  return canonical === undefined || /^und(?:-|$)/i.test(canonical) ? undefined : canonical;
}

/**
 * Cookie name prefixes (RFC 6265bis, case-insensitive as Chromium reads them) and what a browser requires of such a
 * cookie before it keeps it; a cookie that misses one would make the browser refuse the whole capture. Every prefix
 * needs `secure` (so an https url); `__Host-` also the path `/` (the cookie is host-only anyway), `__Http-` also
 * `httpOnly`. The longest prefix is listed first.
 */
const COOKIE_PREFIXES = [
  { prefix: '__host-http-', rootPath: true, httpOnly: true },
  { prefix: '__http-', rootPath: false, httpOnly: true },
  { prefix: '__host-', rootPath: true, httpOnly: false },
  { prefix: '__secure-', rootPath: false, httpOnly: false },
] as const;

/** What a cookie's name prefix asks that the cookie does not give, as issues on the cookie's own fields. */
function cookiePrefixIssues(cookie: { name: string; path?: string; secure?: boolean; httpOnly?: boolean }) {
  const rule = COOKIE_PREFIXES.find(({ prefix }) => cookie.name.toLowerCase().startsWith(prefix));
  if (!rule) return [];
  const named = cookie.name.slice(0, rule.prefix.length);
  return [
    ...(cookie.secure !== true
      ? [{ path: 'secure', message: `cookies named ${named}… need secure: true (and an https url)` }]
      : []),
    ...(rule.rootPath && cookie.path !== undefined && cookie.path !== '/'
      ? [{ path: 'path', message: `cookies named ${named}… need the path /` }]
      : []),
    ...(rule.httpOnly && cookie.httpOnly !== true
      ? [{ path: 'httpOnly', message: `cookies named ${named}… need httpOnly: true` }]
      : []),
  ];
}

const selectorText = (max: number) => z.string().min(1).max(max);

/** `css` or `js`: at most MAX_INJECTED_BYTES of UTF-8 (what the body limit counts). */
const injected = (what: string) => utf8Text(what, MAX_INJECTED_BYTES);

/**
 * zod's records leave out an own `__proto__` entry (so that it cannot set their output's prototype): one named so was
 * accepted and charged, and never sent (red team, round 20). It is refused by name instead.
 */
const withoutProtoEntry = (value: unknown, ctx: { issues: z.core.$ZodRawIssue[] }) => {
  if (typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__')) {
    ctx.issues.push({
      code: 'custom',
      path: ['__proto__'],
      input: value,
      message: 'Header __proto__ may not be set: its name is reserved here',
    });
  }
  return value;
};

const headerRecord = z
  .record(z.string(), z.string().meta({ maxLength: MAX_HEADER_VALUE_LENGTH }))
  .meta({ maxProperties: MAX_HEADERS })
  .check((ctx) => {
    const entries = Object.entries(ctx.value);
    if (entries.length > MAX_HEADERS) {
      ctx.issues.push({
        code: 'too_big',
        origin: 'object',
        maximum: MAX_HEADERS,
        input: ctx.value,
        message: `headers may have at most ${MAX_HEADERS} entries`,
      });
      // Not each entry too: 68,000 refused names in a batch's 1 MiB made a 17 MB answer, more than Lambda returns (red team).
      return;
    }
    for (const [name, value] of entries) {
      const problem = !TOKEN.test(name)
        ? 'is not a valid header name (RFC 7230 token)'
        : isForbiddenHeader(name)
          ? 'may not be set: Host, Cookie, Content-Length, hop-by-hop and Proxy-* headers are the browser’s'
          : value.length > MAX_HEADER_VALUE_LENGTH
            ? `value must be at most ${MAX_HEADER_VALUE_LENGTH} characters`
            : !HEADER_VALUE.test(value)
              ? 'value may hold printable ASCII, spaces and tabs only'
              : undefined;
      if (problem) {
        ctx.issues.push({ code: 'custom', path: [name], input: value, message: `Header ${name} ${problem}` });
      }
    }
  });

const headers = z.preprocess(withoutProtoEntry, headerRecord);

const cookie = z
  .strictObject({
    name: z.string().min(1).regex(TOKEN, 'name must be an RFC 6265 token'),
    value: z
      .string()
      .regex(COOKIE_VALUE, 'value may not hold spaces, quotes, commas, semicolons or backslashes'),
    path: z
      .string()
      .max(MAX_COOKIE_PATH_LENGTH)
      .regex(COOKIE_PATH, 'path must start with / and hold no spaces or semicolons')
      .optional(),
    secure: z.boolean().optional(),
    httpOnly: z.boolean().optional(),
    sameSite: z.enum(['Strict', 'Lax', 'None']).optional(),
  })
  .check((ctx) => {
    const { name, value, sameSite, secure } = ctx.value;
    if (name.length + value.length > MAX_COOKIE_SIZE) {
      ctx.issues.push({
        code: 'too_big',
        origin: 'string',
        maximum: MAX_COOKIE_SIZE,
        path: ['value'],
        input: value,
        message: `name and value together must be at most ${MAX_COOKIE_SIZE} characters`,
      });
    }
    for (const issue of cookiePrefixIssues(ctx.value)) {
      ctx.issues.push({ code: 'custom', path: [issue.path], input: ctx.value, message: issue.message });
    }
    // Browsers drop a SameSite=None cookie that is not Secure.
    if (sameSite === 'None' && secure !== true) {
      ctx.issues.push({
        code: 'custom',
        path: ['sameSite'],
        input: sameSite,
        message: 'sameSite None needs secure: true',
      });
    }
  });

/** The option fields, all optional; a request that uses none of them is captured as before. */
export const captureOptionFields = {
  selector: selectorText(MAX_SELECTOR_LENGTH).optional(),
  scale: z.literal(SCALES).default(1),
  darkMode: z.boolean().default(false),
  reducedMotion: z.boolean().default(false),
  waitUntil: z.enum(WAIT_UNTIL).default('load'),
  waitForSelector: selectorText(MAX_SELECTOR_LENGTH).optional(),
  userAgent: z
    .string()
    .min(1)
    .max(MAX_USER_AGENT_LENGTH)
    .regex(HEADER_VALUE, 'userAgent may hold printable ASCII only')
    .optional(),
  headers: headers.optional(),
  cookies: z.array(cookie).max(MAX_COOKIES).optional(),
  timezone: z
    .string()
    .max(MAX_TIME_ZONE_LENGTH)
    .refine(
      (zone) => canonicalTimeZone(zone) !== undefined,
      'timezone must be an IANA time zone id, e.g. Europe/Paris',
    )
    .optional(),
  locale: z
    .string()
    .max(MAX_LOCALE_LENGTH)
    .refine(
      (tag) => canonicalLocale(tag) !== undefined,
      'locale must be a BCP 47 language tag that names a language (not und), e.g. en-US',
    )
    .optional(),
  css: injected('css').optional(),
  js: injected('js').optional(),
  hideSelectors: z.array(selectorText(MAX_HIDE_SELECTOR_LENGTH)).max(MAX_HIDE_SELECTORS).optional(),
  blockAds: z.boolean().default(false),
  blockCookieBanners: z.boolean().default(false),
  blockChats: z.boolean().default(false),
  click: selectorText(MAX_SELECTOR_LENGTH).optional(),
  failOnHttpError: z.boolean().default(false),
};

/** Fields that shape an image, refused with a content format (`markdown`, `html`) unless they keep the value that changes nothing. */
const IMAGE_ONLY_FIELDS: Record<string, unknown> = { fullPage: false, selector: undefined, scale: 1 };

/**
 * What the option fields cannot check alone: how they go with the rest of the body. zod runs this even when a field
 * failed its own check, so the values are looked at as the unknown input they may still be.
 */
export function combinationIssues(body: Record<string, unknown>) {
  const issues: { path: (string | number)[]; message: string }[] = [];
  // An element is captured as it is; "the whole page" of an element has no meaning.
  if (body.fullPage === true && body.selector !== undefined) {
    issues.push({ path: ['selector'], message: 'selector cannot be combined with fullPage' });
  }
  // Text has no pixels: the fields that shape an image say nothing to a content format.
  if (typeof body.format === 'string' && (CONTENT_FORMATS as readonly string[]).includes(body.format)) {
    for (const [field, neutral] of Object.entries(IMAGE_ONLY_FIELDS)) {
      if (body[field] !== undefined && body[field] !== neutral) {
        issues.push({ path: [field], message: `${field} cannot be combined with format ${body.format}` });
      }
    }
  }
  // The metadata travels in the JSON answer; an image or text answer has no place for it.
  if (body.metadata === true && body.response !== 'json') {
    issues.push({ path: ['metadata'], message: 'metadata needs response: "json"' });
  }
  // A browser keeps no Secure cookie for a plain-http page: it would be dropped without a word.
  const https =
    typeof body.url === 'string' && URL.canParse(body.url) && new URL(body.url).protocol === 'https:';
  if (!https && Array.isArray(body.cookies)) {
    body.cookies.forEach((cookie: unknown, index) => {
      if ((cookie as { secure?: unknown } | null)?.secure === true) {
        issues.push({ path: ['cookies', index, 'secure'], message: 'secure cookies need an https url' });
      }
    });
  }
  return issues;
}
