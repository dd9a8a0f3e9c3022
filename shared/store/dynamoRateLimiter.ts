import { type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  RATE_WINDOW_MS,
  type RateLimitDecision,
  type RateLimiter,
  windowStart,
} from '../accounts/rateLimiter';
import { isConditionFailure, itemKey } from './table';

/**
 * One counter item per subject (an account, or a key's signed links) and window. The increment is conditional on the count being below the limit, so
 * with N concurrent requests and R left exactly min(N, R) pass, and refused requests do not inflate the count.
 * The item expires (TTL) an hour after its window ends.
 */
export class DynamoRateLimiter implements RateLimiter {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly limit: number,
    /** The window's item: the account's by default, `itemKey.signedLinkWindow` for a key's signed links. */
    private readonly windowKey: (
      subject: string,
      start: number,
    ) => Record<string, string> = itemKey.rateWindow,
  ) {}

  async hit(subject: string, now: number, requests = 1): Promise<RateLimitDecision> {
    const start = windowStart(now);
    const reset = start + RATE_WINDOW_MS;
    try {
      const result = await this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: this.windowKey(subject, start),
          UpdateExpression: 'ADD #count :count SET expiresAt = :expiresAt',
          ConditionExpression: 'attribute_not_exists(#count) OR #count <= :room',
          ExpressionAttributeNames: { '#count': 'count' },
          ExpressionAttributeValues: {
            ':count': requests,
            ':room': this.limit - requests,
            ':expiresAt': Math.ceil((reset + RATE_WINDOW_MS) / 1000),
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      const count = Number(result.Attributes?.count ?? this.limit);
      return { allowed: true, limit: this.limit, remaining: Math.max(0, this.limit - count), reset };
    } catch (error) {
      if (isConditionFailure(error)) return { allowed: false, limit: this.limit, remaining: 0, reset };
      throw error;
    }
  }
}
