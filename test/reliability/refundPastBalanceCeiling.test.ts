import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddedDynamo } from '../../local/embeddedDynamo';
import { MAX_BALANCE } from '../../shared/accounts/creditLedger';
import { DynamoAdmissionRound } from '../../shared/store/dynamoAdmissionRound';
import { DynamoCaptureSlots } from '../../shared/store/dynamoCaptureSlots';
import { DynamoCreditLedger } from '../../shared/store/dynamoCreditLedger';
import { DynamoKeyStore } from '../../shared/store/dynamoKeyStore';
import { itemKey } from '../../shared/store/table';
import { startTestStore, TEST_TABLE } from '../helpers/store';

/**
 * Red team (round 13b), credits: docs and shared/accounts/creditLedger.ts promise "every balance is a whole number
 * from 0 to MAX_BALANCE (2^53 - 1)": `add` and `set` refuse to pass it, and the free grant checks a ceiling. A refund
 * does not (`ADD credits :cost` with only the epoch and mark conditions, in refund, refundOnce and a pending refund's
 * return): credits reserved by a capture in flight, an operator's `add` back up to the ceiling meanwhile, then the
 * capture fails and its refund lands on top: the item holds 2^53, past the ceiling (DynamoDB keeps it exactly; JavaScript
 * cannot). The ledger then reads the balance as 0 (`balance()`: GET /api/credits, the dashboard, `npm run credits --
 * get`), the very symptom an earlier round fixed for operator commands ("balances past 2^53 read as 0"), while
 * admissions go on charging it.
 *
 * Low severity (it needs an operator to fill a balance to the ceiling), but it broke a documented invariant on the
 * one path that was left unguarded. Fixed: a refund adds at most up to the ceiling, and fills a balance within its
 * cost of it to MAX_BALANCE, in the same epoch and once (shared/store/dynamoCreditLedger.ts).
 */

let store: EmbeddedDynamo;
let db: DynamoDBDocumentClient;
let credits: DynamoCreditLedger;

beforeAll(async () => {
  store = await startTestStore();
  db = DynamoDBDocumentClient.from(store.client);
  credits = new DynamoCreditLedger(db, TEST_TABLE);
});
afterAll(() => store?.close());

describe('a refund that lands after an operator filled the balance to the ceiling', () => {
  it('leaves the balance within 0 … MAX_BALANCE, and the account usable', async () => {
    const accountId = 'ceiling-account';
    const now = Date.UTC(2026, 0, 1, 12, 10);
    const admissions = new DynamoAdmissionRound(
      db,
      TEST_TABLE,
      100,
      new DynamoCaptureSlots(db, TEST_TABLE, 10),
      new DynamoKeyStore(db, TEST_TABLE),
      credits,
    );
    const identity = { accountId, keyId: 'key_ceiling', isActive: true };
    await credits.set(accountId, MAX_BALANCE);

    // A capture is admitted (1 credit reserved), the operator tops the balance back up to the ceiling, the capture
    // fails and its credit goes back, in the epoch it was reserved in.
    const verdict = await admissions.admit({
      identity,
      budget: 'api',
      now,
      slot: { until: now + 60_000 },
      cost: 1,
    });
    if (!verdict.admitted) throw new Error('expected the capture to be admitted');
    expect(await credits.add(accountId, 1)).toBe(MAX_BALANCE);
    await credits.refundOnce(accountId, 1, 'r-ceiling', verdict.creditEpoch);

    // The raw item, read without the document client's number check.
    const { Item } = await store.client.send(
      new GetItemCommand({
        TableName: TEST_TABLE,
        Key: { pk: { S: itemKey.account(accountId).pk }, sk: { S: itemKey.account(accountId).sk } },
        ConsistentRead: true,
      }),
    );
    const raw = Item?.credits?.N;

    // And the account can still be read and admitted.
    const balance = await credits.balance(accountId).catch((error: Error) => error.message);
    const next = await admissions
      .admit({ identity, budget: 'api', now: now + 1_000, slot: { until: now + 61_000 }, cost: 1 })
      .then(
        (answer) => answer.admitted,
        (error: Error) => error.message,
      );
    // Before the fix: the item holds 9007199254740992, one past the ceiling, and the ledger reads the balance as 0.
    expect({ withinCeiling: BigInt(raw ?? '0') <= BigInt(MAX_BALANCE), balance, next }).toEqual({
      withinCeiling: true,
      balance: MAX_BALANCE,
      next: true,
    });
  });
});
