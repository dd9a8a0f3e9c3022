import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { delayCommands } from '../helpers/lostAnswers';

/**
 * Red team (round 22): requests sharing one Idempotency-Key, sent together, whose first was refused (402 here): the
 * others' record writes found the first's record, which was gone by the time it was read (a refusal's record is
 * removed), and Powertools' own read of it then threw `IdempotencyItemNotFoundError`: 2 or 3 of 10 answered 500, at
 * will. Deployed, DynamoDB hands back the record that stood in the way, and the answer is 409; locally it is too now.
 */

let service: TestLocalService;

beforeAll(async () => {
  service = await startTestLocalService({ FREE_CREDITS: '0', POWERTOOLS_METRICS_DISABLED: 'true' });
  // The read of the record that stood in the way comes after the refusal removed it, every time.
  delayCommands(service.dynamo.client, (command, input) =>
    command === 'GetItemCommand' && input.includes('"IDEMPOTENCY#') ? 300 : 0,
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('requests sharing an Idempotency-Key whose first is refused', () => {
  it.each([
    ['/api/screenshot', { url: 'https://example.com/', async: true }],
    ['/api/batches', { requests: [{ html: '<h1>one</h1>' }] }],
  ])(
    '(%s) are answered 402 or 409, never 500',
    async (path, body) => {
      const account = await service.newAccount();
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          service.postKeyed(path, { apiKey: account.apiKey, key: `together-${path}`, body }),
        ),
      );
      const statuses = answers.map(({ status }) => status);
      expect(statuses.filter((status) => status !== 402 && status !== 409)).toEqual([]);
      expect(statuses).toContain(402);
      expect(await service.balance(account.token)).toBe(0);
    },
    60_000,
  );
});
