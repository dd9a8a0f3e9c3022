import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { createEgressGate } from '../../shared/egress/egressGate';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { DynamoWebhookSecrets, ROTATIONS_AGREE_MS } from '../../shared/store/dynamoWebhookSecrets';
import { itemKey } from '../../shared/store/table';
import { deliverWebhook } from '../../shared/webhooks/deliverWebhook';
import { ROTATION_OVERLAP_MS } from '../../shared/webhooks/webhookSecrets';
import { documentClient } from '../../shared/wiring/stores';
import { dumpTable, startTestStore, TEST_TABLE } from '../helpers/store';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

/** Webhook secrets on the single table (dynalite over HTTP), sealed with a real AES-GCM cipher. */

let store: EmbeddedDynamo;
let secrets: DynamoWebhookSecrets;
let hook: WebhookReceiver;
let accounts = 0;
const T0 = Date.UTC(2026, 10, 26, 4, 0, 0);
const newAccount = () => `acct_webhooks_${++accounts}`;

beforeAll(async () => {
  store = await startTestStore();
  secrets = new DynamoWebhookSecrets(
    documentClient(store.client),
    TEST_TABLE,
    new AesGcmSecretCipher(randomBytes(32)),
  );
  hook = await startWebhookReceiver();
});
afterAll(async () => {
  await hook?.close();
  await store?.close();
});
afterEach(() => {
  hook.received.length = 0;
});

/** Delivers one event signed with the account's secrets at `now`, and returns what the receiver got. */
async function deliveredAt(accountId: string, now: number) {
  const signing = await secrets.signingSecrets(accountId, now);
  const result = await deliverWebhook(
    { url: hook.origin, id: `msg_${now}`, type: 'screenshot.succeeded', timestamp: now, data: { now } },
    signing,
    { egress: createEgressGate({ allowPrivateHosts: hook.hostPort }) },
  );
  expect(result.delivered).toBe(true);
  const got = hook.received.at(-1);
  if (!got) throw new Error('nothing received');
  return got;
}

function verifies(secret: string, got: { body: string; headers: Record<string, string> }): boolean {
  try {
    new Webhook(secret).verify(got.body, got.headers);
    return true;
  } catch {
    return false;
  }
}

describe('DynamoWebhookSecrets.reveal', () => {
  it('creates a whsec_ secret on first use and answers the same one after', async () => {
    const account = newAccount();
    const first = await secrets.reveal(account, T0);
    expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await secrets.reveal(account, T0 + 1000)).toBe(first);
  });

  it('gives each account a secret of its own', async () => {
    expect(await secrets.reveal(newAccount(), T0)).not.toBe(await secrets.reveal(newAccount(), T0));
  });

  it('creates one secret when many first uses run at once', async () => {
    const account = newAccount();
    const revealed = await Promise.all(Array.from({ length: 12 }, () => secrets.reveal(account, T0)));
    expect(new Set(revealed).size).toBe(1);
    expect(await secrets.signingSecrets(account, T0)).toEqual([revealed[0]]);
  });

  it('stores the secret only sealed', async () => {
    const secret = await secrets.reveal(newAccount(), T0);
    const table = await dumpTable(store);
    expect(table).toContain('WEBHOOKSECRET');
    expect(table).not.toContain(secret);
    expect(table).not.toContain(secret.slice('whsec_'.length));
  });

  it("refuses to open another account's sealed secret copied onto this account", async () => {
    const victim = newAccount();
    const attacker = newAccount();
    await secrets.reveal(victim, T0);
    const db = documentClient(store.client);
    const { Item } = await db.send(
      new GetCommand({ TableName: TEST_TABLE, Key: itemKey.webhookSecret(victim), ConsistentRead: true }),
    );
    await db.send(
      new PutCommand({ TableName: TEST_TABLE, Item: { ...Item, ...itemKey.webhookSecret(attacker) } }),
    );
    await expect(secrets.reveal(attacker, T0)).rejects.toThrow(/did not open/);
  });
});

describe('DynamoWebhookSecrets.signingSecrets', () => {
  it('creates the secret when a delivery comes before the owner ever read it', async () => {
    const account = newAccount();
    const [signing] = await secrets.signingSecrets(account, T0);
    expect(await secrets.reveal(account, T0)).toBe(signing);
  });
});

describe('DynamoWebhookSecrets.rotate', () => {
  it('signs with the new and the previous secret for 24 hours, and only the new one after', async () => {
    const account = newAccount();
    const old = await secrets.reveal(account, T0);
    const rotatedAt = T0 + 60_000;
    const fresh = await secrets.rotate(account, rotatedAt);
    expect(fresh).not.toBe(old);
    expect(await secrets.reveal(account, rotatedAt)).toBe(fresh);

    const during = await deliveredAt(account, rotatedAt + ROTATION_OVERLAP_MS - 1);
    expect(verifies(fresh, during)).toBe(true);
    expect(verifies(old, during)).toBe(true);

    const after = await deliveredAt(account, rotatedAt + ROTATION_OVERLAP_MS);
    expect(verifies(fresh, after)).toBe(true);
    expect(verifies(old, after)).toBe(false);
  });

  it('keeps only the secret it replaced when rotated twice within 24 hours', async () => {
    const account = newAccount();
    const first = await secrets.reveal(account, T0);
    const second = await secrets.rotate(account, T0 + 60_000);
    const third = await secrets.rotate(account, T0 + 120_000);
    const signing = await secrets.signingSecrets(account, T0 + 180_000);
    expect(signing).toEqual([third, second]);
    expect(signing).not.toContain(first);
  });

  it('creates the first secret when the account had none', async () => {
    const account = newAccount();
    const created = await secrets.rotate(account, T0);
    expect(await secrets.signingSecrets(account, T0)).toEqual([created]);
  });

  it('never loses the current secret when rotations race: the last one standing replaced the one before it', async () => {
    const account = newAccount();
    await secrets.reveal(account, T0);
    const rotated = await Promise.allSettled([
      secrets.rotate(account, T0 + 1),
      secrets.rotate(account, T0 + 1),
    ]);
    const won = rotated.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(won.length).toBeGreaterThanOrEqual(1);
    const [current, previous] = await secrets.signingSecrets(account, T0 + 2);
    expect(won).toContain(current);
    expect(previous).toBeDefined();
    expect(previous).not.toBe(current);
  });

  it('answers rotations at the same moment with one new secret, which signs, and keeps the one they replaced', async () => {
    const account = newAccount();
    const before = await secrets.reveal(account, T0);
    const rotated = await Promise.allSettled(
      Array.from({ length: 10 }, () => secrets.rotate(account, T0 + 1)),
    );
    const answered = rotated.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(answered.length).toBeGreaterThanOrEqual(1);
    // Every secret handed out as the new one signs: none was displaced by a rotation on top of it.
    const signing = await secrets.signingSecrets(account, T0 + 2);
    for (const secret of answered) expect(signing).toContain(secret);
    expect(signing).toEqual([answered[0], before]);
  });

  it('answers rotations that come one after another within a second with the secret of the first', async () => {
    // Red team (round 20): over HTTP, rotations sent together reach the table one after the other, each read after
    // the write before it; each rotated again, and the third pushed the first one's answer out of the signing pair.
    const account = newAccount();
    const before = await secrets.reveal(account, T0);
    const answered: string[] = [];
    for (let i = 1; i <= 5; i++) answered.push(await secrets.rotate(account, T0 + i * 100));
    expect(new Set(answered).size).toBe(1);
    expect(await secrets.signingSecrets(account, T0 + 600)).toEqual([answered[0], before]);
    // A second later it rotates again.
    const later = await secrets.rotate(account, T0 + 100 + ROTATIONS_AGREE_MS);
    expect(later).not.toBe(answered[0]);
    expect(await secrets.signingSecrets(account, T0 + 1_200)).toEqual([later, answered[0]]);
  });
});
