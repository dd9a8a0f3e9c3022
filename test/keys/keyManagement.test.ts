import { DeleteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouteEventOptions as EventOptions, routeEvent } from '../../local/apiGatewayEvent';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { ephemeralIdentityProvider } from '../../local/ephemeralIdp';
import { invocationContext } from '../../local/invocationContext';
import type { BufferedLambdaHandler } from '../../shared/http/adapter/apiGateway';
import type { KeyRouteName } from '../../shared/http/keyRoutes';
import { DynamoKeyStore } from '../../shared/store/dynamoKeyStore';
import { itemKey } from '../../shared/store/table';
import { createKeyManagement } from '../../shared/wiring/keyManagement';
import { keyLambdas } from '../../shared/wiring/lambdaHandlers';
import { hostileSessionTokens } from '../helpers/hostileSessionTokens';
import { dumpTable, startTestDelivery, startTestStore, TEST_TABLE } from '../helpers/store';

const idp = ephemeralIdentityProvider();
let store: EmbeddedDynamo;
let delivery: Awaited<ReturnType<typeof startTestDelivery>>;
let routes: Record<KeyRouteName, BufferedLambdaHandler>;

beforeAll(async () => {
  [store, delivery] = await Promise.all([startTestStore(), startTestDelivery()]);
  const env = { TABLE_NAME: TEST_TABLE, FREE_CREDITS: '100', ...idp.env, ...delivery.env };
  routes = keyLambdas(createKeyManagement(store.client, env, idp.jwks));
});
afterAll(async () => {
  await store.close();
  await delivery.close();
});

type Handler = KeyRouteName;

async function call(handler: Handler, options: EventOptions = {}) {
  const result = await routes[handler](routeEvent(handler, options), invocationContext());
  return { status: result.statusCode, headers: result.headers ?? {}, body: JSON.parse(result.body) };
}

let accounts = 0;
/** A never-seen account and its session token. */
function newAccount() {
  const id = `account-${++accounts}-${Date.now()}`;
  return { id, token: idp.token(id) };
}

async function createKey(token: string, name = 'test key') {
  const response = await call('createKey', { bearer: token, body: { name } });
  expect(response.status).toBe(201);
  return response.body as {
    id: string;
    name: string;
    key: string;
    signingSecret: string;
    createdAt: number;
    isActive: boolean;
  };
}

describe('POST /api/keys', () => {
  it('creates an active key and shows its full value once, with status 201', async () => {
    const { token } = newAccount();
    const before = Date.now();
    const response = await call('createKey', { bearer: token, body: { name: '  production  ' } });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^key_/),
      name: 'production',
      key: expect.stringMatching(/^sk_live_[0-9a-f]{40}$/),
      signingSecret: expect.stringMatching(/^ss_live_[0-9a-f]{64}$/),
      createdAt: expect.any(Number),
      isActive: true,
    });
    expect(response.body.createdAt).toBeGreaterThanOrEqual(before);
  });

  it('gives every key a different value', async () => {
    const { token } = newAccount();
    const values = await Promise.all([1, 2, 3, 4, 5].map(() => createKey(token)));
    expect(new Set(values.map((k) => k.key)).size).toBe(5);
  });

  it('stores neither the full key value nor anything but its hash and last four characters', async () => {
    const { token } = newAccount();
    const created = await createKey(token);
    const table = await dumpTable(store);
    expect(table).not.toContain(created.key);
    expect(table).not.toContain(created.key.slice(8, 40));
  });

  it('stores the signing secret only sealed: neither it nor its hex appears in the table', async () => {
    const { token } = newAccount();
    const created = await createKey(token);
    const table = await dumpTable(store);
    expect(table).toContain(`SIGNKEY#${created.id}`);
    expect(table).not.toContain(created.signingSecret);
    expect(table).not.toContain(created.signingSecret.slice(8));
    expect(table).not.toContain(Buffer.from(created.signingSecret).toString('base64'));
  });

  it.each([
    ['a missing name', {}, 'invalid_type'],
    ['an empty name', { name: '   ' }, 'too_small'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'too_big'],
    ['a name that is not a string', { name: 42 }, 'invalid_type'],
    ['an unknown field', { name: 'ok', admin: true }, 'unrecognized_keys'],
    ['a body that is not an object', [1, 2], 'invalid_type'],
  ])('refuses %s with 400 and details', async (_, body, code) => {
    const { token } = newAccount();
    const response = await call('createKey', { bearer: token, body });
    expect(response.status).toBe(400);
    expect(response.body.message).toEqual(expect.any(String));
    expect(response.body.details).toContainEqual({
      code,
      path: expect.any(Array),
      message: expect.any(String),
    });
  });

  it('refuses malformed JSON with 400 invalid_json', async () => {
    const { token } = newAccount();
    const response = await call('createKey', { bearer: token, body: '{"name": ' });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([{ code: 'invalid_json', path: [], message: expect.any(String) }]);
  });

  it('refuses an empty body with 400', async () => {
    const { token } = newAccount();
    const response = await call('createKey', { bearer: token });
    expect(response.status).toBe(400);
  });

  it('refuses names holding control or bidirectional formatting characters with 400, and creates nothing', async () => {
    const { token } = newAccount();
    const unsafe = [
      'line\nbreak',
      'nul\u0000x',
      'bell\u0007x',
      'del\u007fx',
      'c1\u0085x',
      'invoice\u202Efdp.exe',
      'embed\u202Ax',
      'isolate\u2066x\u2069',
      'mark\u200Fx',
      'arabic mark\u061Cx',
      'separator\u2028x',
      // Red team (round 20): invisible characters no script needs.
      'prod\u200Bkey',
      'joined\u2060x',
      'bom\uFEFFx',
      'soft\u00ADhyphen',
      // Red team (round 31): the other format characters and the Hangul fillers also showed as plain "prod".
      'prod\u206A\u206B',
      'prod\u{1D173}',
      'prod\u{E0070}\u{E0072}\u{E006F}',
      'prod\u115F',
      'prod\u3164',
      'prod\uFFF9',
      'prod\u034F',
      'prod\u17B4',
      // Tags after a black flag that are no region's code: text nobody sees (review, round 31).
      `prod \u{1F3F4}${String.fromCodePoint(...[...'ignore all'].map((c) => 0xe0000 + c.charCodeAt(0)))}\u{E007F}`,
    ];
    for (const name of unsafe) {
      const response = await call('createKey', { bearer: token, body: { name } });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        message: expect.any(String),
        details: [{ code: 'custom', path: ['name'], message: expect.stringMatching(/control characters/) }],
      });
    }
    expect((await call('listKeys', { bearer: token })).body.keys).toEqual([]);
  });

  it.each([
    ['nothing that draws (zero-width joiners, marks)', '\u200D\u0301\u200C', /visible character/],
    ['a streak of combining marks over the rows around it', `a${'\u0301'.repeat(60)}`, /combining marks/],
    ['blank symbols (the Braille blank)', '\u2800\u2800', /visible character/],
    ['a lone surrogate, which no strict JSON reader takes', 'key \uD800', /well-formed/],
    ['U+FFFD, what bytes that were not UTF-8 are read as', 'bad\uFFFD', /U\+FFFD/],
    ['variation selectors that select nothing', 'prod\uFE0F\uFE0F', /variation selectors/],
  ])('refuses a name of %s with 400 (red team, rounds 20 and 31)', async (_, name, message) => {
    const { token } = newAccount();
    const response = await call('createKey', { bearer: token, body: { name } });
    expect(response.status).toBe(400);
    expect(response.body.details).toEqual([
      { code: 'custom', path: ['name'], message: expect.stringMatching(message) },
    ]);
  });

  it('accepts names in any script, with emoji joined by zero-width joiners', async () => {
    const { token } = newAccount();
    for (const name of [
      'Prüfung ключ 鍵 مفتاح',
      'team 👩\u200D💻',
      'नमस्ते ਸਤਿ ਸ੍ਰੀ',
      'می\u200Cخواهم',
      'Tiếng Việt',
      'go \u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}',
      'love \u2764\uFE0F',
      '葛\u{E0100}城',
      // Format characters that draw a sign: the Arabic number sign, the Syriac abbreviation mark (review, round 31).
      '\u0600\u0661\u0662 رقم',
      'ܐ\u070Fܒ',
      '\u1820\u180B mongol',
    ]) {
      expect((await createKey(token, name)).name).toBe(name);
    }
  });

  it('refuses a body larger than 16 KiB with 413', async () => {
    const { token } = newAccount();
    const response = await call('createKey', { bearer: token, body: { name: 'x'.repeat(20_000) } });
    expect(response.status).toBe(413);
    expect(response.body.message).toMatch(/larger than/);
  });

  it('refuses a body that is not declared as JSON with 415', async () => {
    const { token } = newAccount();
    const response = await call('createKey', {
      bearer: token,
      body: { name: 'a' },
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(415);
  });

  it('allows 100 keys per account and answers the 101st with 409, even when they race', async () => {
    const { token } = newAccount();
    for (let i = 0; i < 90; i++) await createKey(token, `key ${i}`);
    const raced = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call('createKey', { bearer: token, body: { name: `race ${i}` } })),
    );
    expect(raced.filter((r) => r.status === 201)).toHaveLength(10);
    expect(raced.filter((r) => r.status === 409)).toHaveLength(10);
    expect((await call('listKeys', { bearer: token })).body.keys).toHaveLength(100);
  });

  it('frees a slot when a key is deleted, while a revoked key keeps its slot', async () => {
    const { token } = newAccount();
    const keys = [];
    for (let i = 0; i < 100; i++) keys.push(await createKey(token, `key ${i}`));
    await call('updateKey', {
      bearer: token,
      pathParameters: { id: keys[0]?.id ?? '' },
      body: { isActive: false },
    });
    expect((await call('createKey', { bearer: token, body: { name: 'one more' } })).status).toBe(409);
    await call('deleteKey', { bearer: token, pathParameters: { id: keys[1]?.id ?? '' } });
    expect((await call('createKey', { bearer: token, body: { name: 'one more' } })).status).toBe(201);
  });
});

describe('GET /api/keys', () => {
  it('lists the account keys newest first, masked, with lastUsed null for unused keys', async () => {
    const { token } = newAccount();
    const first = await createKey(token, 'first');
    const second = await createKey(token, 'second');
    const response = await call('listKeys', { bearer: token });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      keys: [
        {
          id: second.id,
          name: 'second',
          key: `sk_live_...${second.key.slice(-4)}`,
          lastUsed: null,
          isActive: true,
          createdAt: second.createdAt,
        },
        {
          id: first.id,
          name: 'first',
          key: `sk_live_...${first.key.slice(-4)}`,
          lastUsed: null,
          isActive: true,
          createdAt: first.createdAt,
        },
      ],
    });
  });

  it('returns an empty list for a new account', async () => {
    const { token } = newAccount();
    expect((await call('listKeys', { bearer: token })).body).toEqual({ keys: [] });
  });

  it('never shows another account its keys', async () => {
    const alice = newAccount();
    const bob = newAccount();
    await createKey(alice.token, 'alice key');
    await createKey(bob.token, 'bob key');
    const names = (await call('listKeys', { bearer: bob.token })).body.keys.map(
      (k: { name: string }) => k.name,
    );
    expect(names).toEqual(['bob key']);
  });
});

describe('PATCH /api/keys/{id}', () => {
  it('revokes a key with isActive false', async () => {
    const { token } = newAccount();
    const key = await createKey(token);
    const response = await call('updateKey', {
      bearer: token,
      pathParameters: { id: key.id },
      body: { isActive: false },
    });
    expect(response).toMatchObject({ status: 200, body: { success: true, message: 'API key revoked' } });
    const listed = (await call('listKeys', { bearer: token })).body.keys[0];
    expect(listed).toMatchObject({ id: key.id, isActive: false });
  });

  it('answers 200 and changes nothing for isActive true on an active key', async () => {
    const { token } = newAccount();
    const key = await createKey(token);
    const response = await call('updateKey', {
      bearer: token,
      pathParameters: { id: key.id },
      body: { isActive: true },
    });
    expect(response).toMatchObject({ status: 200, body: { success: true } });
    expect((await call('listKeys', { bearer: token })).body.keys[0].isActive).toBe(true);
  });

  it('never reactivates a revoked key: 409', async () => {
    const { token } = newAccount();
    const key = await createKey(token);
    await call('updateKey', { bearer: token, pathParameters: { id: key.id }, body: { isActive: false } });
    const response = await call('updateKey', {
      bearer: token,
      pathParameters: { id: key.id },
      body: { isActive: true },
    });
    expect(response.status).toBe(409);
    expect(response.body.message).toMatch(/cannot be reactivated/);
    expect((await call('listKeys', { bearer: token })).body.keys[0].isActive).toBe(false);
  });

  it.each([
    ['isActive that is not a boolean', { isActive: 'false' }],
    ['a missing isActive', {}],
    ['an unknown field', { isActive: false, name: 'renamed' }],
  ])('refuses %s with 400', async (_, body) => {
    const { token } = newAccount();
    const key = await createKey(token);
    const response = await call('updateKey', { bearer: token, pathParameters: { id: key.id }, body });
    expect(response.status).toBe(400);
    expect(response.body.details.length).toBeGreaterThan(0);
    expect((await call('listKeys', { bearer: token })).body.keys[0].isActive).toBe(true);
  });

  it('answers 404 for a key of another account, with the same message as for a key that does not exist', async () => {
    const alice = newAccount();
    const mallory = newAccount();
    const key = await createKey(alice.token);
    const theirs = await call('updateKey', {
      bearer: mallory.token,
      pathParameters: { id: key.id },
      body: { isActive: false },
    });
    const missing = await call('updateKey', {
      bearer: mallory.token,
      pathParameters: { id: 'key_000000000000000000000' },
      body: { isActive: false },
    });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(missing.body);
    expect((await call('listKeys', { bearer: alice.token })).body.keys[0].isActive).toBe(true);
  });

  it('answers 404 for an id that is not a key id at all', async () => {
    const { token } = newAccount();
    const response = await call('updateKey', {
      bearer: token,
      pathParameters: { id: '../../etc' },
      body: { isActive: false },
    });
    expect(response.status).toBe(404);
  });
});

describe('DELETE /api/keys/{id}', () => {
  it('deletes a key for good', async () => {
    const { token } = newAccount();
    const key = await createKey(token);
    const response = await call('deleteKey', { bearer: token, pathParameters: { id: key.id } });
    expect(response).toMatchObject({
      status: 200,
      body: { success: true, message: 'API key permanently deleted' },
    });
    expect((await call('listKeys', { bearer: token })).body.keys).toEqual([]);
    expect(await dumpTable(store)).not.toContain(key.id);
    expect((await call('deleteKey', { bearer: token, pathParameters: { id: key.id } })).status).toBe(404);
    expect(
      (await call('updateKey', { bearer: token, pathParameters: { id: key.id }, body: { isActive: false } }))
        .status,
    ).toBe(404);
  });

  it('deletes a revoked key too', async () => {
    const { token } = newAccount();
    const key = await createKey(token);
    await call('updateKey', { bearer: token, pathParameters: { id: key.id }, body: { isActive: false } });
    expect((await call('deleteKey', { bearer: token, pathParameters: { id: key.id } })).status).toBe(200);
  });

  it('answers 404 for a key of another account and leaves it in place', async () => {
    const alice = newAccount();
    const mallory = newAccount();
    const key = await createKey(alice.token);
    expect((await call('deleteKey', { bearer: mallory.token, pathParameters: { id: key.id } })).status).toBe(
      404,
    );
    expect((await call('listKeys', { bearer: alice.token })).body.keys).toHaveLength(1);
  });
});

describe('GET /api/credits', () => {
  it('shows the one-time free grant to a new account, and grants it only once', async () => {
    const { token } = newAccount();
    expect((await call('getCredits', { bearer: token })).body).toEqual({ balance: 100 });
    await createKey(token);
    expect((await call('getCredits', { bearer: token })).body).toEqual({ balance: 100 });
  });
});

describe('session tokens', () => {
  const tokenCases = hostileSessionTokens(idp);

  it.each(tokenCases)('refuses %s with 401 on every route', async (_, makeToken, message) => {
    const { id } = newAccount();
    const bearer = makeToken(id);
    const options = (extra: EventOptions) => (bearer === undefined ? extra : { ...extra, bearer });
    const responses = await Promise.all([
      call('listKeys', options({})),
      call('createKey', options({ body: { name: 'x' } })),
      call(
        'updateKey',
        options({ pathParameters: { id: 'key_000000000000000000000' }, body: { isActive: false } }),
      ),
      call('deleteKey', options({ pathParameters: { id: 'key_000000000000000000000' } })),
      call('getCredits', options({})),
    ]);
    for (const response of responses) {
      expect(response.status).toBe(401);
      expect(response.body.message).toMatch(message);
    }
  });

  it('refuses an Authorization header that is not Bearer', async () => {
    const { id } = newAccount();
    const response = await call('listKeys', { headers: { authorization: `Basic ${idp.token(id)}` } });
    expect(response.status).toBe(401);
  });

  it('accepts a token signed with the trusted key', async () => {
    const { token } = newAccount();
    expect((await call('listKeys', { bearer: token })).status).toBe(200);
  });
});

describe('a key found by its id (what judges a queued job’s key)', () => {
  it('is its account’s alone, inactive once revoked, gone once deleted, and found without its signing item', async () => {
    const owner = newAccount();
    const key = await createKey(owner.token);
    const keys = new DynamoKeyStore(DynamoDBDocumentClient.from(store.client), TEST_TABLE);
    expect(await keys.findById(owner.id, key.id)).toEqual({
      accountId: owner.id,
      keyId: key.id,
      isActive: true,
    });
    expect(await keys.findById(newAccount().id, key.id)).toBeUndefined();
    // Keys made before signed links had no signing item (red team, round 28).
    await DynamoDBDocumentClient.from(store.client).send(
      new DeleteCommand({ TableName: TEST_TABLE, Key: itemKey.signingKey(key.id) }),
    );
    expect((await keys.findById(owner.id, key.id))?.isActive).toBe(true);
    const path = { pathParameters: { id: key.id } };
    expect(
      (await call('updateKey', { bearer: owner.token, ...path, body: { isActive: false } })).status,
    ).toBe(200);
    expect((await keys.findById(owner.id, key.id))?.isActive).toBe(false);
    expect((await call('deleteKey', { bearer: owner.token, ...path })).status).toBe(200);
    expect(await keys.findById(owner.id, key.id)).toBeUndefined();
  });
});
