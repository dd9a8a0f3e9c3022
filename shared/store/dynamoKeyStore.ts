import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { KeyDeletedWhileCreatedError } from '../errors';
import type { ApiKeyRecord, KeyIdentity, KeyStore, NewKey, SigningKey } from '../keys/keyStore';
import { ACCOUNT_KEY_PREFIX, accountAttribute, conditionHeld, itemKey } from './table';

/** lastUsed may lag by up to this much (docs/api.md); within it, repeated uses of a key cost no write. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * How long a create may still write its listing after counting its key: longer than any invocation runs (Lambda
 * stops one at 15 minutes), so a reservation older than this belongs to a creator that is gone.
 */
const RESERVATION_LIFETIME_MS = 15 * 60_000;

/** A key hash no key has (hashes are 64 hex digits): what an unknown key id's signed link reads in its place. */
const NO_KEY_HASH = 'none';

/** Account item attribute: a key counted whose listing its creator has not written yet; its value is when it lapses. */
const RESERVATION_PREFIX = 'keySlot#';
const slotReservation = (keyId: string) => `${RESERVATION_PREFIX}${keyId}`;

/**
 * API keys as three items (docs/data-model.md): the authentication item under the key's hash, which alone decides
 * whether a key works, a listing item under the owner's account, and the sealed signing secret under the key's id.
 * Writes go in the order that keeps a key unusable whenever they disagree after a partial failure: authentication
 * item last on create, first on revoke and delete. `keyCount` on the account item counts a key by its reservation
 * (an attribute of the same item, written in the same write) until its listing is written, then by the listing, so
 * every slot is given back exactly once, by whichever holds it, even after a create that stopped half-way.
 */
export class DynamoKeyStore implements KeyStore {
  /** Per-process memory of recent lastUsed writes, so a warm instance writes at most once a minute per key. */
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(key: NewKey, maxKeys: number): Promise<{ isActive: boolean } | undefined> {
    if (!(await this.reserveSlot(key, maxKeys))) {
      // Full, or only looks full: slots of creators that stopped mid-way are given back, then one more try.
      if (!(await this.freeAbandonedSlots(key.accountId, key.createdAt))) return undefined;
      if (!(await this.reserveSlot(key, maxKeys))) return undefined;
    }
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
      // From here the listing holds the slot; its reservation has done its work.
      await this.dropReservation(key.accountId, key.id);
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
      await this.undoCreate(key.accountId, key.id).catch(() => undefined);
      throw error;
    }
    return { isActive: await this.settleRaceWithOwner(key) };
  }

  /**
   * The key is listed from its first write and works from its last: a delete or a revoke run between them found no
   * authentication item to act on. The listing says what they did, and the key follows it: deleted, it never works
   * (KeyDeletedWhileCreatedError); revoked, it is revoked. Answers whether it works. A delete or revoke that reads the listing after this has
   * the authentication item to act on, and acts on it again after its listing write (delete, revoke below).
   */
  private async settleRaceWithOwner(key: NewKey): Promise<boolean> {
    const listing = await this.listingItem(key.accountId, key.id);
    if (listing?.isActive === true) return true;
    if (listing) {
      await this.deactivate(key.accountId, key.keyHash);
      return false;
    }
    await this.removeAuthentication(key.accountId, key.keyHash);
    await this.removeSigningItem(key.id);
    throw new KeyDeletedWhileCreatedError();
  }

  /**
   * Counts the key and records its reservation (until when its creator may still write the listing) in one write, if
   * the account holds fewer than `maxKeys`. A reservation marks a counted slot that no listing holds yet.
   */
  private reserveSlot(key: NewKey, maxKeys: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(key.accountId),
          UpdateExpression: 'ADD keyCount :one SET #reservation = :until',
          ConditionExpression: 'attribute_not_exists(keyCount) OR keyCount < :max',
          ExpressionAttributeNames: { '#reservation': slotReservation(key.id) },
          ExpressionAttributeValues: {
            ':one': 1,
            ':max': maxKeys,
            ':until': key.createdAt + RESERVATION_LIFETIME_MS,
          },
        }),
      ),
    );
  }

  /**
   * Takes back what a failed create wrote. Its slot goes back once, by whichever holds it: the listing if it was
   * written (the listing's delete decides, as for any delete), else the reservation. When the listing's delete
   * itself fails, nothing is given back here: the reservation stays until it lapses, and a later create settles it.
   */
  private async undoCreate(accountId: string, keyId: string): Promise<void> {
    await this.removeSigningItem(keyId).catch(() => undefined);
    if (!(await this.removeListingAndCount(accountId, keyId)))
      await this.giveBackReservation(accountId, keyId);
  }

  /**
   * Gives back the slot of a reservation no listing holds: only while the reservation is there, so that the creator's
   * undo and repairs by other creates give it back once between them, and the count cannot fall below the keys
   * listed (every other counted slot is a listing or another reservation).
   */
  private giveBackReservation(accountId: string, keyId: string, lapsedBy?: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'ADD keyCount :minusOne REMOVE #reservation',
          ConditionExpression:
            lapsedBy === undefined
              ? 'attribute_exists(#reservation)'
              : 'attribute_exists(#reservation) AND #reservation <= :now',
          ExpressionAttributeNames: { '#reservation': slotReservation(keyId) },
          ExpressionAttributeValues: {
            ':minusOne': -1,
            ...(lapsedBy === undefined ? {} : { ':now': lapsedBy }),
          },
        }),
      ),
    );
  }

  /**
   * The repair after a create refused for a full account: the slots of reservations that lapsed by `now` with no
   * listing (their creator stopped before writing it, and nothing ran its undo) go back. The account item is read
   * before the listings, so a reservation seen here whose listing is gone from the query was either never listed or
   * removed by a delete, which removes the reservation before the listing, and then the conditional give-back finds
   * nothing. True when there was any such slot (given back here or by a concurrent repair).
   */
  private async freeAbandonedSlots(accountId: string, now: number): Promise<boolean> {
    const lapsed = reservationsOf(await this.accountItem(accountId)).flatMap(([keyId, until]) =>
      until <= now ? [keyId] : [],
    );
    if (lapsed.length === 0) return false;
    const listed = new Set((await this.listingItems(accountId)).map(listingKeyId));
    const abandoned = lapsed.filter((keyId) => !listed.has(keyId));
    await Promise.all(abandoned.map((keyId) => this.giveBackReservation(accountId, keyId, now)));
    return abandoned.length > 0;
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
    const keyHash = String(listing.keyHash);
    const revoked = await this.deactivate(accountId, keyHash);
    const listed = await conditionHeld(
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
    // No authentication item yet: a create still under way writes it, and then either finds this listing revoked
    // (and revokes it) or was done before the listing changed, so that it is there to revoke now.
    if (!revoked && listed) await this.deactivate(accountId, keyHash);
    return revoked || listed;
  }

  async delete(accountId: string, keyId: string): Promise<boolean> {
    const listing = await this.listingItem(accountId, keyId);
    if (!listing) return false;
    const keyHash = String(listing.keyHash);
    await this.removeAuthentication(accountId, keyHash);
    await this.removeSigningItem(keyId);
    // A key whose creator stopped between its listing and the end of its reservation still has one; it goes first, so
    // that no repair sees the reservation without its listing and gives the slot back beside this delete. Read before
    // writing (almost no key has one), and only now: the reservation, written before the listing, is visible by then.
    if ((await this.accountItem(accountId))[slotReservation(keyId)] !== undefined)
      await this.dropReservation(accountId, keyId);
    const deleted = await this.removeListingAndCount(accountId, keyId);
    // Once more: a create still under way may have written it since (if it then found the listing, before this
    // removed it, it took the key for listed); one that finds the listing gone removes it itself.
    if (deleted) await this.removeAuthentication(accountId, keyHash);
    return deleted;
  }

  /** Makes the key stop working: its authentication item, if it is this account's, says inactive. */
  private deactivate(accountId: string, keyHash: string): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.apiKey(keyHash),
          UpdateExpression: 'SET isActive = :false',
          ConditionExpression: 'accountId = :account',
          ExpressionAttributeValues: { ':false': false, ':account': accountId },
        }),
      ),
    );
  }

  /** Removes the key's authentication item, if it is this account's: the key no longer exists for any request. */
  private async removeAuthentication(accountId: string, keyHash: string): Promise<void> {
    await conditionHeld(
      this.db.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: itemKey.apiKey(keyHash),
          ConditionExpression: 'accountId = :account',
          ExpressionAttributeValues: { ':account': accountId },
        }),
      ),
    );
  }

  private async dropReservation(accountId: string, keyId: string): Promise<void> {
    await this.db.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: itemKey.account(accountId),
        UpdateExpression: 'REMOVE #reservation',
        ExpressionAttributeNames: { '#reservation': slotReservation(keyId) },
      }),
    );
  }

  async findByHash(keyHash: string): Promise<KeyIdentity | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.apiKey(keyHash), ConsistentRead: true }),
    );
    if (!Item) return undefined;
    return { accountId: String(Item.accountId), keyId: String(Item.keyId), isActive: Item.isActive === true };
  }

  async findById(accountId: string, keyId: string): Promise<KeyIdentity | undefined> {
    const listing = await this.listingItem(accountId, keyId);
    if (!listing) return undefined;
    const identity = await this.findByHash(String(listing.keyHash));
    return identity?.keyId === keyId && identity.accountId === accountId ? identity : undefined;
  }

  async findSigningKey(keyId: string): Promise<SigningKey | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: itemKey.signingKey(keyId), ConsistentRead: true }),
    );
    // The authentication item alone decides whether the key works, exactly as for a Bearer key. An id that names no
    // key reads one too (of a hash no key has), so that the answer's time does not tell who asks whether a key id
    // exists or was deleted (docs/api.md 9.5; red team, round 26: 4.9 against 7.6 ms).
    const identity = await this.findByHash(Item ? String(Item.keyHash) : NO_KEY_HASH);
    if (!Item || identity?.keyId !== keyId || identity.accountId !== Item.accountId) return undefined;
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
    // Only the request that removed the listing gives its slot back, so concurrent deletes count once. A reservation
    // still beside the listing (a create undone after writing it) is the same slot.
    if (removed) {
      await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.account(accountId),
          UpdateExpression: 'ADD keyCount :minusOne REMOVE #lastUsed, #reservation',
          ExpressionAttributeNames: {
            '#lastUsed': accountAttribute.lastUsed(keyId),
            '#reservation': slotReservation(keyId),
          },
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
  const id = listingKeyId(item);
  // Keys used before lastUsed moved to the account item keep their last value on the listing until used again.
  const lastUsed = account[accountAttribute.lastUsed(id)] ?? item.lastUsed;
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

/** The reservations on an account item: key id and when each lapses. */
function reservationsOf(account: Record<string, unknown>): [string, number][] {
  return Object.entries(account).flatMap(([name, until]) =>
    name.startsWith(RESERVATION_PREFIX) && typeof until === 'number'
      ? [[name.slice(RESERVATION_PREFIX.length), until] as [string, number]]
      : [],
  );
}

function listingKeyId(item: Record<string, unknown>): string {
  return String(item.sk).slice(ACCOUNT_KEY_PREFIX.length);
}
