import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, lastFour, newKeyId } from '../../shared/keys/apiKey';
import { authenticateSignedLink } from '../../shared/screenshot/signedLinkAuth';
import { CachingSecretCipher, OPENED_SECRET_TTL_MS } from '../../shared/signing/cachingSecretCipher';
import { signQuery } from '../../shared/signing/signedLink';
import { KmsSecretCipher } from '../../shared/store/kmsSecretCipher';
import { MemoryKeyStore } from '../helpers/memoryPorts';
import { restoredAfterFile } from '../helpers/restoredAfterFile';

const kms = restoredAfterFile(mockClient(KMSClient));
const SECRET = 'ss_live_0123456789abcdef';
const QUERY = 'url=https%3A%2F%2Fshots.io%2F&keyId=x';

let clock: number;
let keys: MemoryKeyStore;
let cipher: CachingSecretCipher;
let keyId: string;

beforeEach(async () => {
  kms.reset();
  kms.on(EncryptCommand).resolves({ CiphertextBlob: new TextEncoder().encode('sealed-blob') });
  kms.on(DecryptCommand).resolves({ Plaintext: new TextEncoder().encode(SECRET) });
  clock = Date.UTC(2026, 0, 1);
  cipher = new CachingSecretCipher(
    new KmsSecretCipher(new KMSClient({ region: 'eu-west-1' }), 'alias/signing'),
    () => clock,
  );
  keys = new MemoryKeyStore();
  keyId = newKeyId(clock);
  const apiKey = generateApiKey();
  await keys.create(
    {
      id: keyId,
      accountId: 'alice',
      name: 'links',
      keyHash: hashApiKey(apiKey),
      last4: lastFour(apiKey),
      createdAt: clock,
      sealedSigningSecret: await cipher.seal(SECRET, keyId),
    },
    100,
  );
});

const open = () =>
  authenticateSignedLink({ keyId, signature: signQuery(SECRET, QUERY), canonicalQuery: QUERY }, keys, cipher);

describe('opened signing secrets', () => {
  it('cost one KMS Decrypt for 100 signed GETs of one key', async () => {
    for (let i = 0; i < 100; i++) expect((await open()).accountId).toBe('alice');
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(1);
  });

  it('are sealed and opened with the key id as encryption context', async () => {
    await open();
    expect(kms.commandCalls(EncryptCommand)[0]?.args[0].input.EncryptionContext).toEqual({ keyId });
    expect(kms.commandCalls(DecryptCommand)[0]?.args[0].input.EncryptionContext).toEqual({ keyId });
  });

  it('are opened again after five minutes', async () => {
    await open();
    clock += OPENED_SECRET_TTL_MS - 1;
    await open();
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(1);
    clock += 1;
    await open();
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(2);
  });

  it('never delay a revocation: the next signed GET of a revoked key is refused', async () => {
    await open();
    await keys.revoke('alice', keyId);
    await expect(open()).rejects.toMatchObject({ status: 401, message: 'API key has been revoked' });
    await keys.delete('alice', keyId);
    await expect(open()).rejects.toMatchObject({ status: 401, message: 'Invalid signature' });
  });

  it('keep nothing that did not open', async () => {
    kms
      .on(DecryptCommand)
      .rejects(Object.assign(new Error('forged'), { name: 'InvalidCiphertextException' }));
    await expect(open()).rejects.toMatchObject({ status: 401 });
    await expect(open()).rejects.toMatchObject({ status: 401 });
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(2);
  });
});
