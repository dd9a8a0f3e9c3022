import type { SessionVerifier } from '../auth/sessionVerifier';
import { ConflictError, NotFoundError } from '../errors';
import type { SecretCipher } from '../signing/secretCipher';
import { generateSigningSecret } from '../signing/signedLink';
import { validate } from '../validation';
import { generateApiKey, hashApiKey, KEY_ID_PATTERN, lastFour, maskApiKey, newKeyId } from './apiKey';
import type { ApiKeyRecord, KeyStore } from './keyStore';
import type { OwnerCredits } from './ownerCredits';
import { createKeyBody, MAX_KEYS_PER_ACCOUNT, updateKeyBody } from './schemas';

// One message for "no such key" and "someone else's key", so key ids of other accounts cannot be probed.
const KEY_NOT_FOUND = 'API key not found';

export interface KeyManagementDeps {
  sessions: SessionVerifier;
  keys: KeyStore;
  credits: OwnerCredits;
  /** Seals each new key's signing secret before it is stored. */
  cipher: SecretCipher;
  freeCredits: number;
  now?: () => number;
}

/** A key as lists show it: masked, never its value. */
export interface PublicKey {
  id: string;
  name: string;
  /** `sk_live_...` and the last four characters. */
  key: string;
  lastUsed: number | null;
  isActive: boolean;
  createdAt: number;
}

/** A new key, its full value and its signing secret shown this once. */
export interface CreatedKey {
  id: string;
  name: string;
  key: string;
  /** Signs links for `<img>` tags (docs/api.md, "Signed links"). */
  signingSecret: string;
  createdAt: number;
  /** False only when the owner revoked the key while it was being created. */
  isActive: boolean;
}

export interface KeyChange {
  success: true;
  message: string;
}

/**
 * The session-token use cases: the account owner's keys and credit balance. Each takes the session token as
 * presented (undefined when none was) and, where there is one, the request body as a thunk read after the token
 * and the key id were checked.
 */
export interface KeyManagement {
  listKeys(sessionToken: string | undefined): Promise<{ keys: PublicKey[] }>;
  createKey(sessionToken: string | undefined, request: () => unknown): Promise<CreatedKey>;
  updateKey(sessionToken: string | undefined, keyId: string, request: () => unknown): Promise<KeyChange>;
  deleteKey(sessionToken: string | undefined, keyId: string): Promise<KeyChange>;
  getCredits(sessionToken: string | undefined): Promise<{ balance: number }>;
}

export function keyManagement(deps: KeyManagementDeps): KeyManagement {
  const now = deps.now ?? Date.now;

  /** Verifies the session token; the first time an account is seen it gets its free credits. */
  async function accountOf(sessionToken: string | undefined): Promise<string> {
    const accountId = await deps.sessions.accountIdOf(sessionToken);
    await deps.credits.grantFreeCreditsOnce(accountId, deps.freeCredits, now());
    return accountId;
  }

  function checkedKeyId(keyId: string): string {
    if (!KEY_ID_PATTERN.test(keyId)) throw new NotFoundError(KEY_NOT_FOUND);
    return keyId;
  }

  return {
    async listKeys(sessionToken) {
      const accountId = await accountOf(sessionToken);
      const keys = await deps.keys.list(accountId);
      return { keys: keys.map(publicRecord) };
    },

    async createKey(sessionToken, request) {
      const accountId = await accountOf(sessionToken);
      const { name } = validate(createKeyBody, request());
      const key = generateApiKey();
      const createdAt = now();
      const id = newKeyId(createdAt);
      const signingSecret = generateSigningSecret();
      const stored = await deps.keys.create(
        {
          id,
          accountId,
          name,
          keyHash: hashApiKey(key),
          last4: lastFour(key),
          createdAt,
          sealedSigningSecret: await deps.cipher.seal(signingSecret, id),
        },
        MAX_KEYS_PER_ACCOUNT,
      );
      if (!stored) {
        throw new ConflictError(
          `An account can hold at most ${MAX_KEYS_PER_ACCOUNT} API keys; delete one first`,
        );
      }
      return { id, name, key, signingSecret, createdAt, isActive: stored.isActive };
    },

    async updateKey(sessionToken, rawKeyId, request) {
      const accountId = await accountOf(sessionToken);
      const keyId = checkedKeyId(rawKeyId);
      const { isActive } = validate(updateKeyBody, request());
      if (isActive) {
        const record = await deps.keys.get(accountId, keyId);
        if (!record) throw new NotFoundError(KEY_NOT_FOUND);
        if (!record.isActive) {
          throw new ConflictError('A revoked API key cannot be reactivated; create a new key instead');
        }
        return { success: true, message: 'API key is active' };
      }
      if (!(await deps.keys.revoke(accountId, keyId))) throw new NotFoundError(KEY_NOT_FOUND);
      return { success: true, message: 'API key revoked' };
    },

    async deleteKey(sessionToken, keyId) {
      const accountId = await accountOf(sessionToken);
      if (!(await deps.keys.delete(accountId, checkedKeyId(keyId)))) throw new NotFoundError(KEY_NOT_FOUND);
      return { success: true, message: 'API key permanently deleted' };
    },

    async getCredits(sessionToken) {
      const accountId = await accountOf(sessionToken);
      return { balance: await deps.credits.balance(accountId) };
    },
  };
}

function publicRecord(record: ApiKeyRecord): PublicKey {
  return {
    id: record.id,
    name: record.name,
    key: maskApiKey(record.last4),
    lastUsed: record.lastUsed,
    isActive: record.isActive,
    createdAt: record.createdAt,
  };
}
