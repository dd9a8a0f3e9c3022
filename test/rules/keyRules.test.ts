import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/errors';
import { type KeyManagement, keyManagement } from '../../shared/keys/keyManagement';
import { MAX_KEYS_PER_ACCOUNT } from '../../shared/keys/schemas';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import { fakeSessions, MemoryCreditLedger, MemoryKeyStore } from '../helpers/memoryPorts';

/** The key-management rules against in-memory ports; test/keys/ proves the same through dynalite and real JWTs. */

let keys: MemoryKeyStore;
let credits: MemoryCreditLedger;
let cipher: AesGcmSecretCipher;
let manage: KeyManagement;
const alice = 'session:alice';
const bob = 'session:bob';
const body = (value: unknown) => () => value;

beforeEach(() => {
  keys = new MemoryKeyStore();
  credits = new MemoryCreditLedger();
  cipher = new AesGcmSecretCipher(randomBytes(32));
  // A clock that moves on at each reading: key ids sort by creation time, and two keys made in the same
  // millisecond would otherwise be ordered by their random part.
  let clock = Date.UTC(2026, 0, 1);
  manage = keyManagement({
    sessions: fakeSessions,
    keys,
    credits,
    cipher,
    freeCredits: 100,
    now: () => clock++,
  });
});

/** The status and message a call fails with. */
async function failure(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await call;
  } catch (error) {
    if (error instanceof AppError) return { status: error.status, message: error.message };
    throw error;
  }
  throw new Error('expected the call to fail');
}

describe('sessions', () => {
  it('refuses a missing or invalid session token with 401 before reading anything else', async () => {
    let read = false;
    const spy = () => {
      read = true;
      return { name: 'x' };
    };
    expect((await failure(manage.createKey(undefined, spy))).status).toBe(401);
    expect((await failure(manage.createKey('garbage', spy))).status).toBe(401);
    expect(read).toBe(false);
  });

  it('grants the free credits once, the first time an account is seen', async () => {
    expect(await manage.getCredits(alice)).toEqual({ balance: 100 });
    await manage.listKeys(alice);
    expect(await manage.getCredits(alice)).toEqual({ balance: 100 });
  });
});

describe('keys', () => {
  it('shows the full key once on creation and only its masked form in lists, newest first', async () => {
    const first = await manage.createKey(alice, body({ name: ' one ' }));
    const second = await manage.createKey(alice, body({ name: 'two' }));
    expect(first).toMatchObject({
      name: 'one',
      key: expect.stringMatching(/^sk_live_[0-9a-f]{40}$/),
      isActive: true,
    });
    const { keys: listed } = await manage.listKeys(alice);
    expect(listed.map((key) => key.id)).toEqual([second.id, first.id]);
    expect(listed[1]?.key).toBe(`sk_live_...${first.key.slice(-4)}`);
    expect(JSON.stringify(listed)).not.toContain(first.key);
  });

  it('shows a signing secret once, beside the key, and stores it sealed under the key id', async () => {
    const created = await manage.createKey(alice, body({ name: 'img' }));
    expect(created.signingSecret).toMatch(/^ss_live_[0-9a-f]{64}$/);
    expect(keys.dump()).not.toContain(created.signingSecret);
    expect(JSON.stringify(await manage.listKeys(alice))).not.toContain(created.signingSecret);
    const stored = await keys.findSigningKey(created.id);
    expect(await cipher.open(stored?.sealedSigningSecret ?? '', created.id)).toBe(created.signingSecret);
    // Bound to its key: the same sealed value does not open for another key id.
    expect(await cipher.open(stored?.sealedSigningSecret ?? '', 'key_other')).toBeUndefined();
  });

  it(`refuses the key after ${MAX_KEYS_PER_ACCOUNT} with 409, revoked keys counting`, async () => {
    for (let i = 0; i < MAX_KEYS_PER_ACCOUNT; i++) await manage.createKey(alice, body({ name: `k${i}` }));
    const [newest] = (await manage.listKeys(alice)).keys;
    await manage.updateKey(alice, newest?.id ?? '', body({ isActive: false }));
    expect((await failure(manage.createKey(alice, body({ name: 'one more' })))).status).toBe(409);
  });

  it('revokes for good: reactivating answers 409, re-affirming an active key changes nothing', async () => {
    const { id } = await manage.createKey(alice, body({ name: 'k' }));
    expect(await manage.updateKey(alice, id, body({ isActive: true }))).toEqual({
      success: true,
      message: 'API key is active',
    });
    expect(await manage.updateKey(alice, id, body({ isActive: false }))).toEqual({
      success: true,
      message: 'API key revoked',
    });
    expect((await failure(manage.updateKey(alice, id, body({ isActive: true })))).status).toBe(409);
  });

  it("answers another account's key exactly as a key that does not exist", async () => {
    const { id } = await manage.createKey(alice, body({ name: 'k' }));
    const missing = id.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
    const calls = (keyId: string) => [
      manage.updateKey(bob, keyId, body({ isActive: false })),
      manage.deleteKey(bob, keyId),
      manage.deleteKey(bob, 'not-a-key-id'),
    ];
    const theirs = await Promise.all(calls(id).map(failure));
    const nobodys = await Promise.all(calls(missing).map(failure));
    expect(theirs).toEqual(nobodys);
    expect(new Set(theirs.map((f) => `${f.status} ${f.message}`))).toEqual(
      new Set(['404 API key not found']),
    );
    expect((await manage.listKeys(alice)).keys[0]?.isActive).toBe(true);
  });

  it('reads the body only after the token and the key id were accepted', async () => {
    let read = false;
    const spy = () => {
      read = true;
      return { isActive: false };
    };
    expect((await failure(manage.updateKey(alice, 'nope', spy))).status).toBe(404);
    expect(read).toBe(false);
  });

  it('deletes for good', async () => {
    const { id } = await manage.createKey(alice, body({ name: 'k' }));
    expect(await manage.deleteKey(alice, id)).toEqual({
      success: true,
      message: 'API key permanently deleted',
    });
    expect((await manage.listKeys(alice)).keys).toEqual([]);
    expect((await failure(manage.deleteKey(alice, id))).status).toBe(404);
  });

  it.each([
    [{}, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(101) }, 'name'],
    [{ name: 'k', extra: 1 }, ''],
  ])('refuses %j with 400', async (value, path) => {
    const error = await manage.createKey(alice, body(value)).catch((e: AppError) => e);
    expect(error).toBeInstanceOf(AppError);
    const details = (error as AppError).fields().details as { path: string[] }[];
    expect((error as AppError).status).toBe(400);
    expect(details.map((detail) => detail.path.join('.'))).toContain(path);
  });
});
