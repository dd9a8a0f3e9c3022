import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { MAX_BALANCE } from '../shared/accounts/creditLedger';
import { readServiceConfig } from '../shared/config';
import { BalanceOverflowError, InsufficientCreditsError } from '../shared/errors';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { loadOrCreateKey } from '../shared/store/fileSecretCipher';
import { createStores } from '../shared/wiring/stores';
import { ACCOUNT_ID_RULE, isAccountIdArgument } from './accountIdArgument';
import { claimDataFormat } from './dataFormat';
import {
  localDynamoClient,
  localDynamoCredentials,
  localDynamoSecretFile,
  startEmbeddedDynamo,
} from './embeddedDynamo';
import { ownerOnlyDir } from './ownerOnlyDir';
import { STATE_FILE } from './stateFile';

/**
 * The operator's credits tool, printing JSON:
 *   npm run --silent credits -- get|add|set <accountId> [n]
 *   npm run --silent credits -- refunds list | refunds return <refundId>
 * Refunds are the ones a failed capture could not write (docs/deploy.md, "When an alarm fires").
 * Store: the running local service's (DATA_DIR), else the deployed table when TABLE_NAME is set (AWS credentials
 * and region from the usual AWS environment), else the local data dir opened directly.
 */
const USAGE = `usage: npm run --silent credits -- get <accountId> | add <accountId> <n> | set <accountId> <n>
       npm run --silent credits -- refunds list | refunds return <refundId>
  ${ACCOUNT_ID_RULE}; n is a whole number (set: 0 to ${MAX_BALANCE}; add: -${MAX_BALANCE} to ${MAX_BALANCE})`;
const [command, target, amountText] = process.argv.slice(2);
// Only plain decimal digits: Number() would also take '1e3', '0x10' or ' 5 ', and round numbers past 2^53.
const amount = /^-?\d+$/.test(amountText ?? '') ? Number(amountText) : Number.NaN;
const valid =
  command === 'refunds'
    ? target === 'list' || (target === 'return' && !!amountText)
    : isAccountIdArgument(target) &&
      (command === 'get' ||
        ((command === 'add' || command === 'set') &&
          Number.isSafeInteger(amount) &&
          !(command === 'set' && amount < 0)));
if (!valid || !target) {
  process.stderr.write(`${USAGE}\n`);
  process.exit(2);
}

const dataDir = resolve(process.env.DATA_DIR || '.data');
const config = readServiceConfig(process.env);
const { client, close } = await openStore();
try {
  const { credits, pendingRefunds } = createStores(client, config);
  if (command === 'refunds') {
    const answer =
      target === 'list'
        ? { refunds: await pendingRefunds.list() }
        : await pendingRefunds.giveBack(amountText ?? '');
    process.stdout.write(`${JSON.stringify(answer)}\n`);
    if ('outcome' in answer && answer.outcome === 'notFound') process.exitCode = 1;
  } else {
    const balance =
      command === 'get'
        ? await credits.balance(target)
        : command === 'add'
          ? await credits.add(target, amount)
          : await credits.set(target, amount);
    process.stdout.write(`${JSON.stringify({ accountId: target, balance })}\n`);
  }
} catch (error) {
  if (error instanceof InsufficientCreditsError) {
    process.stderr.write(
      `The balance is ${error.available}; removing ${error.required} would make it negative\n`,
    );
  } else if (error instanceof BalanceOverflowError) {
    process.stderr.write(`${error.message}; nothing was changed\n`);
  } else {
    throw error;
  }
  process.exitCode = 1;
} finally {
  await close();
}

async function openStore(): Promise<{ client: DynamoDBClient; close: () => Promise<void> }> {
  const running = await readFile(join(dataDir, STATE_FILE), 'utf8').then(
    (text) => JSON.parse(text) as { dynamoEndpoint: string; pid: number },
    () => undefined,
  );
  if (running && isAlive(running.pid)) {
    // The running service's table answers only requests signed with the data dir's own secret.
    const secret = await loadOrCreateKey(localDynamoSecretFile(dataDir));
    const client = localDynamoClient(running.dynamoEndpoint, localDynamoCredentials(secret));
    return { client, close: async () => client.destroy() };
  }
  if (process.env.TABLE_NAME) {
    const client = createDynamoClient();
    return { client, close: async () => client.destroy() };
  }
  // No server runs with this DATA_DIR: its own store is opened, which is not the running server's if it was given
  // another one. Said on stderr, so stdout stays the answer alone.
  process.stderr.write(
    `note: no npm start is running with DATA_DIR=${dataDir}; this reads and changes that folder's own store, ` +
      'so run this command with the DATA_DIR you gave npm start\n',
  );
  // Narrowed to its owner as `npm start` does, before the store may write into it (an older folder's table upgrade
  // copies every item there: red team, round 28).
  await ownerOnlyDir(dataDir);
  await claimDataFormat(dataDir);
  const embedded = await startEmbeddedDynamo({ dataDir, tableName: config.tableName });
  return { client: embedded.client, close: () => embedded.close() };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
