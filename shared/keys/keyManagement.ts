import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { CreditLedger } from '../accounts/creditLedger';
import type { SessionVerifier } from '../auth/sessionVerifier';
import { ConflictError, NotFoundError } from '../errors';
import type { ApiRoute } from '../http/managementHandler';
import { bearerCredential, parseJsonBody } from '../http/request';
import { jsonResponse } from '../http/response';
import { generateApiKey, hashApiKey, KEY_ID_PATTERN, lastFour, maskApiKey, newKeyId } from './apiKey';
import type { ApiKeyRecord, KeyStore } from './keyStore';
import { createKeyBody, updateKeyBody } from './schemas';

export const MAX_KEYS_PER_ACCOUNT = 100;
// One message for "no such key" and "someone else's key", so key ids of other accounts cannot be probed.
const KEY_NOT_FOUND = 'API key not found';

export interface KeyManagementDeps {
  sessions: SessionVerifier;
  keys: KeyStore;
  credits: CreditLedger;
  freeCredits: number;
  now?: () => number;
}

export interface KeyManagementRoutes {
  listKeys: ApiRoute;
  createKey: ApiRoute;
  updateKey: ApiRoute;
  deleteKey: ApiRoute;
  getCredits: ApiRoute;
}

/** The session-token routes: the account owner's keys and credit balance. */
export function keyManagementRoutes(deps: KeyManagementDeps): KeyManagementRoutes {
  const now = deps.now ?? Date.now;

  /** Verifies the session token; the first time an account is seen it gets its free credits. */
  async function accountOf(event: APIGatewayProxyEvent): Promise<string> {
    const accountId = await deps.sessions.accountIdOf(bearerCredential(event));
    await deps.credits.grantFreeCreditsOnce(accountId, deps.freeCredits, now());
    return accountId;
  }

  function keyIdOf(event: APIGatewayProxyEvent): string {
    const id = event.pathParameters?.id ?? '';
    if (!KEY_ID_PATTERN.test(id)) throw new NotFoundError(KEY_NOT_FOUND);
    return id;
  }

  return {
    async listKeys(event) {
      const accountId = await accountOf(event);
      const keys = await deps.keys.list(accountId);
      return jsonResponse(200, { keys: keys.map(publicRecord) });
    },

    async createKey(event) {
      const accountId = await accountOf(event);
      const { name } = parseJsonBody(event, createKeyBody);
      const key = generateApiKey();
      const createdAt = now();
      const id = newKeyId(createdAt);
      const stored = await deps.keys.create(
        { id, accountId, name, keyHash: hashApiKey(key), last4: lastFour(key), createdAt },
        MAX_KEYS_PER_ACCOUNT,
      );
      if (!stored) {
        throw new ConflictError(
          `An account can hold at most ${MAX_KEYS_PER_ACCOUNT} API keys; delete one first`,
        );
      }
      return jsonResponse(201, { id, name, key, createdAt, isActive: true });
    },

    async updateKey(event) {
      const accountId = await accountOf(event);
      const keyId = keyIdOf(event);
      const { isActive } = parseJsonBody(event, updateKeyBody);
      if (isActive) {
        const record = await deps.keys.get(accountId, keyId);
        if (!record) throw new NotFoundError(KEY_NOT_FOUND);
        if (!record.isActive) {
          throw new ConflictError('A revoked API key cannot be reactivated; create a new key instead');
        }
        return jsonResponse(200, { success: true, message: 'API key is active' });
      }
      if (!(await deps.keys.revoke(accountId, keyId))) throw new NotFoundError(KEY_NOT_FOUND);
      return jsonResponse(200, { success: true, message: 'API key revoked' });
    },

    async deleteKey(event) {
      const accountId = await accountOf(event);
      if (!(await deps.keys.delete(accountId, keyIdOf(event)))) throw new NotFoundError(KEY_NOT_FOUND);
      return jsonResponse(200, { success: true, message: 'API key permanently deleted' });
    },

    async getCredits(event) {
      const accountId = await accountOf(event);
      return jsonResponse(200, { balance: await deps.credits.balance(accountId) });
    },
  };
}

function publicRecord(record: ApiKeyRecord) {
  return {
    id: record.id,
    name: record.name,
    key: maskApiKey(record.last4),
    lastUsed: record.lastUsed,
    isActive: record.isActive,
    createdAt: record.createdAt,
  };
}
