import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouteEventOptions, routeEvent } from '../../local/apiGatewayEvent';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { ephemeralIdentityProvider } from '../../local/ephemeralIdp';
import { invocationContext } from '../../local/invocationContext';
import type { BufferedLambdaHandler } from '../../shared/http/adapter/apiGateway';
import type { WebhookSecrets } from '../../shared/webhooks/webhookSecrets';
import { webhookSecretLambda } from '../../shared/wiring/lambdaHandlers';
import { createWebhookSecretManagement, createWebhookSecrets } from '../../shared/wiring/webhooks';
import { hostileSessionTokens } from '../helpers/hostileSessionTokens';
import { logged } from '../helpers/logs';
import { dumpTable, startTestDelivery, startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * GET /api/webhook-secret and POST /api/webhook-secret/rotate through the Lambda HTTP adapter, with real RS256
 * session tokens, on dynalite, wired as the functions wire them (the secret sealed by the key file cipher).
 */

const idp = ephemeralIdentityProvider();
let store: EmbeddedDynamo;
let delivery: Awaited<ReturnType<typeof startTestDelivery>>;
let handler: BufferedLambdaHandler;
/** What the worker builds from the same table and environment. */
let workerSecrets: WebhookSecrets;

beforeAll(async () => {
  [store, delivery] = await Promise.all([startTestStore(), startTestDelivery()]);
  const env = { TABLE_NAME: TEST_TABLE, ...idp.env, ...delivery.env };
  handler = webhookSecretLambda(createWebhookSecretManagement(store.client, env, idp.jwks));
  workerSecrets = createWebhookSecrets(store.client, env);
});
afterAll(async () => {
  await store?.close();
  await delivery?.close();
});

type Operation = 'getWebhookSecret' | 'rotateWebhookSecret';

async function call(operation: Operation, options: RouteEventOptions = {}) {
  const result = await handler(routeEvent(operation, options), invocationContext());
  return { status: result.statusCode, headers: result.headers ?? {}, body: JSON.parse(result.body) };
}

let accounts = 0;
function newAccount() {
  const id = `webhook-account-${++accounts}-${Date.now()}`;
  return { id, token: idp.token(id) };
}

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

describe('GET /api/webhook-secret', () => {
  it('creates the secret on first use and answers the same one after, not cached by anyone', async () => {
    const { token } = newAccount();
    const first = await call('getWebhookSecret', { bearer: token });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ secret: expect.stringMatching(SECRET) });
    expect(first.headers['Cache-Control']).toBe('no-store');
    expect((await call('getWebhookSecret', { bearer: token })).body).toEqual(first.body);
  });

  it('answers the secret the deliveries of the account are signed with', async () => {
    const { id, token } = newAccount();
    const { secret } = (await call('getWebhookSecret', { bearer: token })).body;
    expect(await workerSecrets.signingSecrets(id, Date.now())).toEqual([secret]);
  });

  it('stores it only sealed', async () => {
    const { token } = newAccount();
    const { secret } = (await call('getWebhookSecret', { bearer: token })).body;
    const table = await dumpTable(store);
    expect(table).not.toContain(secret);
    expect(table).not.toContain(secret.slice('whsec_'.length));
  });
});

describe('POST /api/webhook-secret/rotate', () => {
  it('answers a new secret, and deliveries are signed by it and the previous one', async () => {
    const { id, token } = newAccount();
    const before = (await call('getWebhookSecret', { bearer: token })).body.secret;
    const rotated = await call('rotateWebhookSecret', { bearer: token });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ secret: expect.stringMatching(SECRET) });
    expect(rotated.body.secret).not.toBe(before);
    expect((await call('getWebhookSecret', { bearer: token })).body.secret).toBe(rotated.body.secret);

    const signing = await workerSecrets.signingSecrets(id, Date.now());
    expect(signing).toEqual([rotated.body.secret, before]);
    const body = '{"type":"screenshot.succeeded"}';
    const sentAt = new Date();
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': signing.map((s) => new Webhook(s).sign('msg_1', sentAt, body)).join(' '),
    };
    for (const secret of [before, rotated.body.secret]) {
      expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
    }
  });

  it('ignores a body: nothing a caller sends chooses the secret', async () => {
    const { token } = newAccount();
    const chosen = 'whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=';
    const rotated = await call('rotateWebhookSecret', { bearer: token, body: { secret: chosen } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(chosen);
  });
});

describe('the logs of the webhook-secret routes', () => {
  it('never hold a secret, read or rotated', async () => {
    const { token } = newAccount();
    const answered: string[] = [];
    const output = await logged(async () => {
      answered.push((await call('getWebhookSecret', { bearer: token })).body.secret);
      answered.push((await call('rotateWebhookSecret', { bearer: token })).body.secret);
    });
    expect(answered).toHaveLength(2);
    for (const secret of answered) {
      expect(output).not.toContain(secret);
      expect(output).not.toContain(secret.slice('whsec_'.length));
    }
  });
});

describe('the webhook secret of another account', () => {
  it("is never answered: each token reads and rotates its own account's secret only", async () => {
    const alice = newAccount();
    const bob = newAccount();
    const alices = (await call('getWebhookSecret', { bearer: alice.token })).body.secret;
    const bobs = (await call('getWebhookSecret', { bearer: bob.token })).body.secret;
    expect(bobs).not.toBe(alices);
    await call('rotateWebhookSecret', { bearer: bob.token });
    expect((await call('getWebhookSecret', { bearer: alice.token })).body.secret).toBe(alices);
    expect(await workerSecrets.signingSecrets(alice.id, Date.now())).toEqual([alices]);
  });
});

describe('session tokens on the webhook-secret routes', () => {
  const tokenCases = hostileSessionTokens(idp);

  it.each(tokenCases)('refuses %s with 401 and creates no secret', async (_, makeToken, message) => {
    const { id } = newAccount();
    const bearer = makeToken(id);
    const options = bearer === undefined ? {} : { bearer };
    for (const operation of ['getWebhookSecret', 'rotateWebhookSecret'] as const) {
      const response = await call(operation, options);
      expect(response.status).toBe(401);
      expect(response.body.message).toMatch(message);
      expect(JSON.stringify(response.body)).not.toContain('whsec_');
    }
    expect(await dumpTable(store)).not.toContain(id);
  });
});
