import { Validator } from '@seriousme/openapi-schema-validator';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createKeyBody, updateKeyBody } from '../../shared/keys/schemas';
import { openApiDocument } from '../../shared/openapi/document';
import { operationOf, ROUTES } from '../../shared/routes';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { type DescribedApi, describedApi, type Json } from './documentSchemas';

let api: DescribedApi;

beforeAll(async () => {
  api = await describedApi();
});

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const requestSchema = (method: string, path: string) =>
  api.operation(method, path).requestBody.content['application/json'].schema;

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 according to @seriousme/openapi-schema-validator', async () => {
    const result = await new Validator().validate(JSON.parse(JSON.stringify(openApiDocument())));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(openApiDocument().openapi).toBe('3.1.0');
  });

  it.each(ROUTES.map((route) => [route.method, route.path, route] as const))(
    'describes %s %s, which the route table serves',
    (method, path, route) => {
      const operation = api.operation(method, path);
      expect(operation.operationId).toBe(operationOf(route));
    },
  );

  it('describes no operation that the route table lacks', () => {
    const described = Object.entries(openApiDocument().paths ?? {}).flatMap(([path, item]) =>
      METHODS.filter((method) => method in (item ?? {})).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(described.sort()).toEqual(ROUTES.map((route) => `${route.method} ${route.path}`).sort());
  });

  it('requires an API key, a session token or nothing, as each route authenticates', () => {
    const expected = {
      apiKey: [{ apiKey: [] }],
      signature: [{ signedLink: [] }],
      session: [{ sessionToken: [] }],
      none: [],
    };
    for (const route of ROUTES)
      expect(api.operation(route.method, route.path).security).toEqual(expected[route.auth]);
    expect(Object.keys(api.resolved.components.securitySchemes).sort()).toEqual([
      'apiKey',
      'sessionToken',
      'signedLink',
    ]);
  });

  it('describes the successful capture as binary PNG, JPEG, WebP, PDF, Markdown, HTML or AVIF (or a JSON link) with its caching and cost headers', () => {
    const ok = api.operation('POST', '/api/screenshot').responses['200'];
    const binaryTypes = [
      'image/png',
      'image/jpeg',
      'image/webp',
      'application/pdf',
      'text/markdown',
      'text/html',
      'image/avif',
    ];
    expect(Object.keys(ok.content)).toEqual([...binaryTypes, 'application/json']);
    for (const type of binaryTypes) {
      expect(ok.content[type].schema).toEqual({ type: 'string', format: 'binary' });
    }
    expect(ok.content['application/json'].schema.required).toEqual(
      expect.arrayContaining(['url', 'expiresAt', 'etag', 'creditsCharged', 'cache']),
    );
    expect(Object.keys(ok.headers).sort()).toEqual(
      [
        'Cache-Control',
        'Content-Length',
        'Content-Security-Policy',
        'ETag',
        'X-Content-Type-Options',
        'X-Cache',
        'X-Credits-Charged',
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'X-Screenshot-Truncated',
      ].sort(),
    );
    expect(ok.headers['X-Screenshot-Truncated'].required).toBeUndefined();
    expect(ok.headers['X-Cache'].required).toBeUndefined();
  });

  it('carries the rate-limit headers on every screenshot answer after authentication, and Retry-After on 429', () => {
    const responses = api.operation('POST', '/api/screenshot').responses;
    for (const status of ['200', '400', '402', '413', '415', '429', '500']) {
      expect(Object.keys(responses[status].headers)).toEqual(
        expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
      );
    }
    expect(responses['429'].headers['Retry-After'].required).toBe(true);
    expect(responses['401'].headers).toBeUndefined();
  });

  it('describes screenshot errors as { error } and key-management errors as { message }', () => {
    // The contract answers job and batch lookups, and Idempotency-Key conflicts, with { message }.
    const messageStyle = (handler: string, status: string) =>
      handler === 'getJob' || handler === 'getBatch' || status === '409' || status === '422';
    for (const route of ROUTES.filter((r) => r.auth !== 'none')) {
      const responses = api.operation(route.method, route.path).responses;
      for (const [status, response] of Object.entries<Json>(responses)) {
        if (Number(status) < 400) continue;
        const field =
          (route.auth === 'apiKey' || route.auth === 'signature') && !messageStyle(route.handler, status)
            ? 'error'
            : 'message';
        expect(response.content['application/json'].schema.required, `${route.handler} ${status}`).toContain(
          field,
        );
      }
    }
  });

  it('describes an unexpected error (500) and a store outage (503 with Retry-After) on every route that reads the table', () => {
    for (const route of ROUTES.filter((r) => r.auth !== 'none')) {
      const responses = api.operation(route.method, route.path).responses;
      expect(responses['500'], `${route.handler} 500`).toBeDefined();
      expect(responses['503']?.headers?.['Retry-After'], `${route.handler} 503`).toBeDefined();
    }
  });

  it('describes body limits on the routes that take a body, and no async answer on a signed link', () => {
    for (const route of ROUTES.filter((r) => r.method === 'POST' || r.method === 'PATCH')) {
      if (route.handler === 'mcp' || route.handler === 'webhookSecret') continue;
      const responses = api.operation(route.method, route.path).responses;
      expect(Object.keys(responses), route.handler).toEqual(expect.arrayContaining(['413', '415']));
    }
    expect(api.operation('POST', '/api/batches').responses['413'].description).toContain('1 MiB');
    expect(api.operation('GET', '/api/screenshot').responses['202']).toBeUndefined();
  });

  it('describes the key id path parameter on PATCH and DELETE', () => {
    for (const method of ['PATCH', 'DELETE']) {
      expect(api.operation(method, '/api/keys/{id}').parameters).toEqual([
        expect.objectContaining({ in: 'path', name: 'id', required: true }),
      ]);
    }
  });
});

describe('the documented request bodies', () => {
  it('accept a full, valid screenshot request', () => {
    const body = {
      url: 'https://example.com/page?x=1',
      width: 1280,
      height: 720,
      format: 'webp',
      quality: 80,
      fullPage: true,
      device: 'tablet',
      delay: 500,
    };
    expect(screenshotRequest.safeParse(body).success).toBe(true);
    expect(api.check(requestSchema('POST', '/api/screenshot'), body)).toEqual([]);
  });

  it.each([
    ['a missing url', { format: 'png' }],
    ['both url and html', { url: 'https://example.com', html: '<p>x</p>' }],
    ['an unknown field', { url: 'https://example.com', colour: 'red' }],
    ['a width below 320', { url: 'https://example.com', width: 100 }],
    ['a fractional delay', { url: 'https://example.com', delay: 1.5 }],
    ['an unknown format', { url: 'https://example.com', format: 'gif' }],
    ['a non-http URL', { url: 'ftp://example.com/file' }],
    // Red team (round 23): the published schema had no bound on these.
    [
      '21 headers',
      {
        url: 'https://example.com',
        headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v'])),
      },
    ],
    [
      'a header value of 1025 characters',
      { url: 'https://example.com', headers: { 'x-a': 'v'.repeat(1025) } },
    ],
    ['css of 32,769 characters', { url: 'https://example.com', css: 'a'.repeat(32_769) }],
  ])('refuse a screenshot request with %s, as the handler does', (_, body) => {
    expect(screenshotRequest.safeParse(body).success).toBe(false);
    expect(api.check(requestSchema('POST', '/api/screenshot'), body)).not.toEqual([]);
  });

  // Red team (round 24): a batch's requests listed the three fields the batch route refuses in them.
  it.each(['async', 'webhookUrl', 'response'])(
    "refuse %s in a batch's request, as the batch route does",
    (field) => {
      const value = { async: true, webhookUrl: 'https://example.com/hook', response: 'json' }[field];
      const batch = (request: Record<string, unknown>) => ({ requests: [request] });
      const schema = requestSchema('POST', '/api/batches');
      expect(api.check(schema, batch({ url: 'https://example.com', metadata: true }))).toEqual([]);
      expect(api.check(schema, batch({ url: 'https://example.com', [field]: value }))).not.toEqual([]);
    },
  );

  it('agree with the screenshot handler on generated requests', () => {
    const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
    const body = fc.record(
      {
        url: fc.constantFrom(
          'https://example.com',
          'http://a.example/x?y=1',
          'ftp://example.com',
          'not a url',
          42,
        ),
        width: maybe(fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.double(), fc.constant('800'))),
        height: maybe(fc.integer({ min: 0, max: 5000 })),
        format: maybe(fc.constantFrom('png', 'jpeg', 'webp', 'gif', 'PNG')),
        quality: maybe(fc.integer({ min: -5, max: 120 })),
        fullPage: maybe(fc.oneof(fc.boolean(), fc.constant('true'))),
        device: maybe(fc.constantFrom('mobile', 'tablet', 'desktop', 'watch')),
        delay: maybe(fc.oneof(fc.integer({ min: -10, max: 40_000 }), fc.constant(0.5))),
        extra: maybe(fc.string()),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(body, (value) => {
        const defined = JSON.parse(JSON.stringify(value));
        const documented = api.check(requestSchema('POST', '/api/screenshot'), defined).length === 0;
        expect(documented).toBe(screenshotRequest.safeParse(defined).success);
      }),
      { numRuns: 300 },
    );
  });

  it('agree with the key-management handlers on key names and isActive', () => {
    const createSchema = requestSchema('POST', '/api/keys');
    const updateSchema = requestSchema('PATCH', '/api/keys/{id}');
    // Names without surrounding blanks: the handler trims first, which JSON Schema cannot express (it is described).
    const name = fc.string({ maxLength: 120 }).filter((s) => s.trim() === s);
    fc.assert(
      fc.property(
        fc.oneof(fc.record({ name }), fc.record({ name, other: fc.integer() }), fc.constant({})),
        (value) => {
          expect(api.check(createSchema, value).length === 0).toBe(createKeyBody.safeParse(value).success);
        },
      ),
    );
    fc.assert(
      fc.property(
        fc.oneof(fc.record({ isActive: fc.boolean() }), fc.record({ isActive: fc.string() })),
        (value) => {
          expect(api.check(updateSchema, value).length === 0).toBe(updateKeyBody.safeParse(value).success);
        },
      ),
    );
  });
});
