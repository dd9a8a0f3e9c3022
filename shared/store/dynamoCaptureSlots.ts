import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  type CaptureSlots,
  linkSlotLimit,
  newLeaseId,
  poolOf,
  type SlotLease,
  type SlotPool,
} from '../accounts/captureSlots';
import { conditionHeld, isConditionFailure, itemKey } from './table';

/** Lease attributes are named `lease_<id>` and hold their expiry (ms since epoch). */
export const LEASE_PREFIX = 'lease_';

type ItemKey = ReturnType<typeof itemKey.account>;

/**
 * Leases kept in the account's own item (`ACCOUNT#id / ACCOUNT`, beside its credits, so that admission takes a slot
 * and reserves credits in one write: shared/store/dynamoAdmissionRound.ts). The item has a `held` counter and one
 * attribute per lease, and every write changes both at once and is conditional, so the counter always equals the
 * number of leases: taking a lease needs `held < bound`, giving one back or reaping a lapsed one needs that lease to
 * still be there. A lapsed lease (its function died, or a penalty wore off) is reaped by the next request that finds
 * the item full. No transactions are needed (dynalite has none). The capacity all accounts share has no item: the
 * renderers' reserved concurrency is it (docs/api.md 6.5).
 */
export class DynamoCaptureSlots implements CaptureSlots {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    readonly limit: number,
  ) {}

  async acquire(
    accountId: string,
    now: number,
    expiresAt: number,
    pool?: SlotPool,
  ): Promise<SlotLease | undefined> {
    const leaseId = newLeaseId(pool);
    const held = await this.take(itemKey.account(accountId), leaseId, expiresAt, this.limit, now);
    return held === undefined ? undefined : { leaseId, newcomer: held === 0 };
  }

  async release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void> {
    const own = itemKey.account(accountId);
    await (penaltyUntil === undefined ? this.drop(own, leaseId) : this.extend(own, leaseId, penaltyUntil));
  }

  /**
   * Takes a lease on the item while it holds fewer than `bound`: how many live leases it held before (lapsed ones not
   * yet reaped do not count), or undefined when full.
   * Full: free the leases that lapsed (others may be reaping them too), then try again. Each round finds fewer lapsed
   * leases, so this ends; the bound on rounds only guards against a store that misbehaves.
   */
  async take(
    key: ItemKey,
    leaseId: string,
    expiresAt: number,
    bound: number,
    now: number,
  ): Promise<number | undefined> {
    const pool = poolOf(leaseId);
    for (let round = 0; round <= bound; round++) {
      try {
        const { Attributes } = await this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: key,
            UpdateExpression: `ADD ${heldCounts(pool, ':one')} SET #lease = :expiresAt`,
            ConditionExpression: `(attribute_not_exists(held) OR held < :bound)${linkCondition(pool)}`,
            ExpressionAttributeNames: { '#lease': `${LEASE_PREFIX}${leaseId}` },
            ExpressionAttributeValues: {
              ':one': 1,
              ':bound': bound,
              ':expiresAt': expiresAt,
              ...linkBound(pool, bound),
            },
            ReturnValues: 'ALL_OLD',
          }),
        );
        return liveLeases(Attributes, now).length;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
      }
      if (!(await this.reapLapsed(key, now))) return undefined;
    }
    return undefined;
  }

  /** Keeps a lease until `until` instead of giving it back, if it is still there. */
  private extend(key: ItemKey, leaseId: string, until: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #lease = :until',
          ConditionExpression: 'attribute_exists(#lease)',
          ExpressionAttributeNames: { '#lease': `${LEASE_PREFIX}${leaseId}` },
          ExpressionAttributeValues: { ':until': until },
        }),
      ),
    );
  }

  /** Removes one lease and its count, if it is still there (and, with `lapsedBy`, only if it lapsed by then). */
  drop(key: ItemKey, leaseId: string, lapsedBy?: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: `ADD ${heldCounts(poolOf(leaseId), ':minusOne')} REMOVE #lease`,
          ConditionExpression:
            lapsedBy === undefined
              ? 'attribute_exists(#lease)'
              : 'attribute_exists(#lease) AND #lease <= :now',
          ExpressionAttributeNames: { '#lease': `${LEASE_PREFIX}${leaseId}` },
          ExpressionAttributeValues: {
            ':minusOne': -1,
            ...(lapsedBy === undefined ? {} : { ':now': lapsedBy }),
          },
        }),
      ),
    );
  }

  /** Drops every lease of the item that lapsed by `now`; false when there was none. */
  async reapLapsed(key: ItemKey, now: number): Promise<boolean> {
    const { Item } = await this.db.send(
      new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }),
    );
    const lapsed = leasesOf(Item).flatMap(([leaseId, expiresAt]) => (expiresAt <= now ? [leaseId] : []));
    await Promise.all(lapsed.map((leaseId) => this.drop(key, leaseId, now)));
    return lapsed.length > 0;
  }
}

/** Attribute of the account item counting its signed links' leases, beside `held`, which counts them all. */
export const LINK_HELD = 'heldByLinks';

/** An ADD clause changing by `value` the counters a lease of `pool` is counted in: `held`, and a signed link's own. */
export function heldCounts(pool: SlotPool, value: string): string {
  return pool === 'signedLink' ? `held ${value}, ${LINK_HELD} ${value}` : `held ${value}`;
}

/** What taking a slot for `pool` adds to the condition that a slot is free (its value: linkBound). */
export function linkCondition(pool: SlotPool): string {
  return pool === 'signedLink'
    ? ` AND (attribute_not_exists(${LINK_HELD}) OR ${LINK_HELD} < :linkBound)`
    : '';
}

export function linkBound(pool: SlotPool, bound: number): Record<string, number> {
  return pool === 'signedLink' ? { ':linkBound': linkSlotLimit(bound) } : {};
}

/** The leases of an item: id and expiry. */
function leasesOf(item: Record<string, unknown> | undefined): [string, number][] {
  return Object.entries(item ?? {}).flatMap(([name, expiresAt]) =>
    name.startsWith(LEASE_PREFIX) && typeof expiresAt === 'number'
      ? [[name.slice(LEASE_PREFIX.length), expiresAt] as [string, number]]
      : [],
  );
}

export function liveLeases(item: Record<string, unknown> | undefined, now: number): [string, number][] {
  return leasesOf(item).filter(([, expiresAt]) => expiresAt > now);
}
