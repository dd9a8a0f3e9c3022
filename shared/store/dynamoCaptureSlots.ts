import { randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { CaptureSlots } from '../accounts/captureSlots';
import { conditionHeld, itemKey } from './table';

/** Lease attributes are named `lease_<id>` and hold their expiry (ms since epoch). */
const LEASE_PREFIX = 'lease_';

/**
 * One item per account (`ACCOUNT#id / CAPTURES`): a `held` counter and one attribute per lease. Every write changes
 * both at once and is conditional, so the counter always equals the number of leases: taking a slot needs
 * `held < limit`, giving one back or reaping a lapsed one needs that lease to still be there. With N requests at once
 * and S slots free, exactly min(N, S) get one. A lapsed lease (its function died) is reaped by the next request that
 * finds the account full. No transactions are needed (dynalite has none).
 */
export class DynamoCaptureSlots implements CaptureSlots {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    readonly limit: number,
  ) {}

  async acquire(accountId: string, now: number, expiresAt: number): Promise<string | undefined> {
    const leaseId = randomUUID().replaceAll('-', '');
    // Full: free the leases of functions that died (others may be reaping them too), then try again. Each round
    // finds fewer lapsed leases, so this ends; the bound only guards against a store that misbehaves.
    for (let round = 0; round <= this.limit; round++) {
      if (await this.take(accountId, leaseId, expiresAt)) return leaseId;
      if (!(await this.reapLapsed(accountId, now))) return undefined;
    }
    return undefined;
  }

  async release(accountId: string, leaseId: string): Promise<void> {
    await this.drop(accountId, leaseId);
  }

  private take(accountId: string, leaseId: string, expiresAt: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.captureSlots(accountId),
          UpdateExpression: 'ADD held :one SET #lease = :expiresAt',
          ConditionExpression: 'attribute_not_exists(held) OR held < :limit',
          ExpressionAttributeNames: { '#lease': `${LEASE_PREFIX}${leaseId}` },
          ExpressionAttributeValues: { ':one': 1, ':limit': this.limit, ':expiresAt': expiresAt },
        }),
      ),
    );
  }

  /** Removes one lease and its count, if it is still there (and, with `lapsedBy`, only if it lapsed by then). */
  private drop(accountId: string, leaseId: string, lapsedBy?: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.captureSlots(accountId),
          UpdateExpression: 'ADD held :minusOne REMOVE #lease',
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

  /** Drops every lease that lapsed by `now`; false when there was none. */
  private async reapLapsed(accountId: string, now: number): Promise<boolean> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.captureSlots(accountId),
        ConsistentRead: true,
      }),
    );
    const lapsed = Object.entries(Item ?? {}).flatMap(([name, expiresAt]) =>
      name.startsWith(LEASE_PREFIX) && typeof expiresAt === 'number' && expiresAt <= now
        ? [name.slice(LEASE_PREFIX.length)]
        : [],
    );
    await Promise.all(lapsed.map((leaseId) => this.drop(accountId, leaseId, now)));
    return lapsed.length > 0;
  }
}
