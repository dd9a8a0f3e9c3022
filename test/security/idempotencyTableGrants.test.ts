import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLE_ACTIONS } from '../../infra/tableAccess';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { enforceTableGrant } from '../helpers/tableGrant';

/**
 * Red team (round 4, jobs): deployed, each route's function may call only the DynamoDB actions of its grant
 * (infra/tableAccess.ts). POST /api/screenshot and POST /api/batches keep Idempotency-Key records through Powertools,
 * which removes the record of a request that was not accepted (DeleteItem), so that "a request refused (400, 402,
 * 429, …) may be sent again with its key" (docs/api.md 19.5). Neither grant holds dynamodb:DeleteItem: deployed, that
 * removal is refused by IAM, Powertools throws its own error in place of the route's answer, and the record stays
 * "in progress". A 402 or 429 then reaches the client as a 500, and its retry with the same key as a 409.
 *
 * Here the grant is enforced as IAM would: the table refuses an idempotency record's command whose action is not in
 * the route's grant (the same list the stack deploys), and everything else runs as ever.
 */

let service: TestLocalService;
/** The grant of the route under test; undefined: nothing enforced. */
let grant: readonly string[] | undefined;
const refusedActions = new Set<string>();

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '1', POWERTOOLS_METRICS_DISABLED: 'true' });
  enforceTableGrant(service.dynamo.client, (action, input) => {
    const onIdempotencyRecord = JSON.stringify(input).includes('"IDEMPOTENCY#');
    if (!grant || !onIdempotencyRecord || grant.includes(action)) return false;
    refusedActions.add(action);
    return true;
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('an Idempotency-Key request that is not accepted, under its route’s deployed table grant', () => {
  it.each([
    [
      'POST /api/batches',
      'createBatch',
      '/api/batches',
      { requests: [{ html: '<p>1</p>' }, { html: '<p>2</p>' }] },
    ],
    [
      'POST /api/screenshot',
      'screenshot',
      '/api/screenshot',
      { html: '<p>1</p>', fullPage: true, async: true },
    ],
  ] as const)(
    '%s answers its 402, and again to a retry with the same key',
    async (_, route, path, body) => {
      const account = await service.newAccount(); // 1 credit: both bodies cost 2
      grant = TABLE_ACTIONS[route];
      try {
        const send = () => service.postKeyed(path, { apiKey: account.apiKey, key: `order-${route}`, body });
        const first = await send();
        const retry = await send();
        expect({ first: first.status, retry: retry.status, refused: [...refusedActions] }).toEqual({
          first: 402,
          retry: 402,
          refused: [],
        });
      } finally {
        grant = undefined;
        refusedActions.clear();
      }
    },
    60_000,
  );
});
