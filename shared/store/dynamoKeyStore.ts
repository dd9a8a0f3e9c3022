import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, KeyIdentity, KeyStore, NewKey, SigningKey } from '../keys/keyStore';
import { ACCOUNT_KEY_PREFIX, accountAttribute, conditionHeld, itemKey } from './table';

/** lastUsed may lag by up to this much (docs/api.md); within it, repeated uses of a key cost no write. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * API keys as three items (docs/data-model.md): the authentication item under the key's hash, which alone decides
 * whether a key works, a listing item under the owner's account, and the sealed signing secret under the key's id.
 * Writes go in the order that keeps a key unusable whenever they disagree after a partial failure: authentication
 * item last on create, first on revoke and delete.
 */
export class DynamoKeyStore implements KeyStore {
  /** Per-process memory of recent lastUsed writes, so a warm instance writes at most once a minute per key. */
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(key: NewKey, maxKeys: number): Promise<boolean> {
    const slotTaken = await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(key.accountId),
          UpdateExpression: 'ADD keyCount :one',
          ConditionExpression: 'attribute_not_exists(keyCount) OR keyCount < :max',
          ExpressionAttributeValues: { ':one': 1, ':max': maxKeys },
        }),
      ),
    );
    if (!slotTaken) return false;
    try {
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...itemKey.accountKey(key.accountId, key.id),
            keyHash: key.keyHash,
            name: key.name,
            last4: key.last4,
            isActive: true,
            createdAt: key.createdAt,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...itemKey.signingKey(key.id),
            accountId: key.accountId,
            keyHash: key.keyHash,
            sealedSigningSecret: key.sealedSigningSecret,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      await this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...itemKey.apiKey(key.keyHash), accountId: key.accountId, keyId: key.id, isActive: true },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    } catch (error) {
      await this.removeSigningItem(key.id).catch(() => undefined);
      await this.removeListingAndCount(key.accountId, key.id).catch(() => undefined);
      throw error;
    }
    return true;
  }

  async list(accountId: string): Promise<ApiKeyRecord[]> {
    const [items, account] = await Promise.all([this.listingItems(accountId), this.accountItem(accountId)]);
    return items.map((item) => toRecord(accountId, item, account));
  }

  private async listingItems(accountId: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.db.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': itemKey.account(accountId).pk, ':prefix': ACCOUNT_KEY_PREFIX },
          ScanIndexForward: false,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  async get(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    const [item, account] = await Promise.all([
      this.listingItem(accountId, keyId),
      this.accountItem(accountId),
    ]);
    return item && toRecord(accountId, item, account);
  }

  /** The account item, where lastUsed of each key lives (docs/data-model.md). */
  private async accountItem(accountId: string): Promise<Record<string, unknown>> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.account(accountId), ConsistentRead: true }),
    );
    return Item ?? {};
  }

  async revoke(accountId: string, keyId: string): Promise<boolean> {
    const listing = await this.listingItem(accountId, keyId);
    if (!listing) return false;
    const revoked = await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.apiKey(String(listing.keyHash)),
          UpdateExpression: 'SET isActive = :false',
          ConditionExpression: 'accountId = :account',
          ExpressionAttributeValues: { ':false': false, ':account': accountId },
        }),
      ),
    );
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.accountKey(accountId, keyId),
          UpdateExpression: 'SET isActive = :false',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':false': false },
        }),
      ),
    );
    return revoked;
  }

  async delete(accountId: string, keyId: string): Promise<boolean> {
    const listing = await this.listingItem(accountId, keyId);
    if (!listing) return false;
    await conditionHeld(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: itemKey.apiKey(String(listing.keyHash)),
          ConditionExpression: 'accountId = :account',
          ExpressionAttributeValues: { ':account': accountId },
        }),
      ),
    );
    await this.removeSigningItem(keyId);
    return this.removeListingAndCount(accountId, keyId);
  }

  async findByHash(keyHash: string): Promise<KeyIdentity | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.apiKey(keyHash), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return { accountId: String(Item.accountId), keyId: String(Item.keyId), isActive: Item.isActive === true };
  }

  async findSigningKey(keyId: string): Promise<SigningKey | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.signingKey(keyId), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    // The authentication item alone decides whether the key works, exactly as for a Bearer key.
    const identity = await this.findByHash(String(Item.keyHash));
    if (identity?.keyId !== keyId || identity.accountId !== Item.accountId) return undefined;
    return { identity, sealedSigningSecret: String(Item.sealedSigningSecret) };
  }

  async touchLastUsed(identity: KeyIdentity, now: number): Promise<void> {
    if (this.claimLastUsed(identity.keyId, now))
      await this.writeLastUsed(identity.accountId, accountAttribute.lastUsed(identity.keyId), now);
  }

  /**
   * Whether this use of the key is due a lastUsed write, taking it if so: at most one a minute per key and process.
   * The admission round writes it with the rest of the account item (shared/store/dynamoAdmissionRound.ts).
   */
  claimLastUsed(keyId: string, now: number): boolean {
    const previous = this.lastUsedWritten.get(keyId);
    if (previous !== undefined && now - previous < LAST_USED_RESOLUTION_MS) return false;
    this.lastUsedWritten.set(keyId, now);
    return true;
  }

  /** lastUsed on its own write, which never moves it backwards and never recreates a deleted account. */
  async writeLastUsed(accountId: string, attribute: string, now: number): Promise<void> {
    await conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'SET #lastUsed = :now',
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(#lastUsed) OR #lastUsed < :now)',
          ExpressionAttributeNames: { '#lastUsed': attribute },
          ExpressionAttributeValues: { ':now': now },
        }),
      ),
    );
  }

  private async listingItem(accountId: string, keyId: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.accountKey(accountId, keyId),
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  private async removeSigningItem(keyId: string): Promise<void> {
    await this.db.send(new DeleteCommand({ TableName: this.tableName, Key: itemKey.signingKey(keyId) }));
  }

  private async removeListingAndCount(accountId: string, keyId: string): Promise<boolean> {
    const removed = await conditionHeld(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: itemKey.accountKey(accountId, keyId),
          ConditionExpression: 'attribute_exists(pk)',
        }),
      ),
    );
    // Only the request that removed the listing gives its slot back, so concurrent deletes count once.
    if (removed) {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'ADD keyCount :minusOne REMOVE #lastUsed',
          ExpressionAttributeNames: { '#lastUsed': accountAttribute.lastUsed(keyId) },
          ExpressionAttributeValues: { ':minusOne': -1 },
        }),
      );
    }
    return removed;
  }
}

function toRecord(
  accountId: string,
  item: Record<string, unknown>,
  account: Record<string, unknown>,
): ApiKeyRecord {
  const id = String(item.sk).slice(ACCOUNT_KEY_PREFIX.length);
  const lastUsed = account[accountAttribute.lastUsed(id)];
  return {
    id,
    accountId,
    name: String(item.name),
    last4: String(item.last4),
    isActive: item.isActive === true,
    createdAt: Number(item.createdAt),
    lastUsed: typeof lastUsed === 'number' ? lastUsed : null,
  };
}
