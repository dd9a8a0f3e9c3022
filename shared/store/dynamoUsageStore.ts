import { randomBytes } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  DAY_MS,
  type DayTotals,
  dayStart,
  isCapture,
  USAGE_RECORD_RETENTION_DAYS,
  USAGE_RETENTION_DAYS,
  type UsageRecord,
  type UsageStore,
  utcDate,
} from '../usage/usageStore';
import { itemKey, queryItems, USAGE_DAY_PREFIX } from './table';

const DAY_RETENTION_MS = USAGE_RETENTION_DAYS * DAY_MS;
const RECORD_RETENTION_MS = USAGE_RECORD_RETENTION_DAYS * DAY_MS;

/** Per-key counters live on the day item as `keyCaptures#<keyId>` and `keyCredits#<keyId>`. */
const KEY_COUNTER = /^key(Captures|Credits)#(.+)$/;

/**
 * Usage in the account's partition (docs/data-model.md): each request as its own item, and one item per UTC day
 * whose counters (the day's and each key's) one UpdateItem raises with atomic ADDs, so the totals stay exact
 * under concurrent requests and a day's per-key counts always add up to its totals. The usage history is then a
 * single Query over the window's day items. Both kinds of item expire by TTL: the records after a week, the days
 * (the rollup the history reads) after 90 days.
 */
export class DynamoUsageStore implements UsageStore {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async add(record: UsageRecord): Promise<void> {
    const captured = isCapture(record.status);
    await Promise.all([
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...itemKey.usageRecord(record.accountId, record.at, randomBytes(6).toString('hex')),
            keyId: record.keyId,
            at: record.at,
            status: record.status,
            credits: record.credits,
            cacheHit: record.cacheHit,
            durationMs: record.durationMs,
            host: record.host,
            via: record.via,
            expiresAt: Math.ceil((record.at + RECORD_RETENTION_MS) / 1000),
          },
        }),
      ),
      this.db.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: itemKey.usageDay(record.accountId, utcDate(record.at)),
          UpdateExpression:
            'SET expiresAt = :expiresAt ' +
            'ADD captures :captures, failed :failed, cacheHits :cacheHits, credits :credits, ' +
            '#keyCaptures :captures, #keyCredits :credits',
          ExpressionAttributeNames: {
            '#keyCaptures': `keyCaptures#${record.keyId}`,
            '#keyCredits': `keyCredits#${record.keyId}`,
          },
          ExpressionAttributeValues: {
            ':captures': captured ? 1 : 0,
            ':failed': captured ? 0 : 1,
            ':cacheHits': record.cacheHit ? 1 : 0,
            ':credits': record.credits,
            // Kept for whole days: the day's last request is kept its full retention too.
            ':expiresAt': Math.ceil((dayStart(record.at) + DAY_MS + DAY_RETENTION_MS) / 1000),
          },
        }),
      ),
    ]);
  }

  async days(accountId: string, fromDate: string, toDate: string): Promise<DayTotals[]> {
    const items = await queryItems(this.db, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': itemKey.account(accountId).pk,
        ':from': itemKey.usageDay(accountId, fromDate).sk,
        ':to': itemKey.usageDay(accountId, toDate).sk,
      },
      ConsistentRead: true,
    });
    return items.map(toDayTotals);
  }
}

function toDayTotals(item: Record<string, unknown>): DayTotals {
  const byKey: DayTotals['byKey'] = {};
  for (const [name, value] of Object.entries(item)) {
    const match = KEY_COUNTER.exec(name);
    if (!match?.[2]) continue;
    const totals = byKey[match[2]] ?? { captures: 0, credits: 0 };
    if (match[1] === 'Captures') totals.captures = Number(value);
    else totals.credits = Number(value);
    byKey[match[2]] = totals;
  }
  return {
    date: String(item.sk).slice(USAGE_DAY_PREFIX.length),
    captures: Number(item.captures ?? 0),
    failed: Number(item.failed ?? 0),
    cacheHits: Number(item.cacheHits ?? 0),
    credits: Number(item.credits ?? 0),
    byKey,
  };
}
