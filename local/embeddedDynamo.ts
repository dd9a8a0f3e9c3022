import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
} from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { ownPorts } from '../shared/egress/ownPorts';
import { createDynamoClient, type DynamoTimeouts } from '../shared/store/dynamoClient';
import { loadOrCreateKey } from '../shared/store/fileSecretCipher';
import { tableDefinition } from '../shared/store/table';
import { requireAwsJsonSignature } from './awsJsonSignatureGate';
import { type DiskRoom, diskRoom } from './diskSpace';
import { serveOwnClientsOnly } from './ownClients';
import { ownerOnlyDir } from './ownerOnlyDir';
import { type LocalCredentials, localCredentials } from './sigV4Verifier';
import { hasEveryIndex, resumeUpgrade, tableSettled, upgradeTable } from './tableUpgrade';

/** How long a closing store waits for the requests under way to be answered. */
const ANSWERS_GRACE_MS = 5_000;

/** The region the local DynamoDB clients sign for. */
const LOCAL_DYNAMO_REGION = 'local';

/**
 * The embedded DynamoDB: dynalite (DynamoDB's HTTP API on LevelDB) on a loopback port. With a data dir it persists
 * under `<dataDir>/dynamodb`; without, it lives in memory (tests).
 */
export interface EmbeddedDynamo {
  endpoint: string;
  /** What its clients sign with (localDynamoClient): it answers no other request. */
  credentials: LocalCredentials;
  client: DynamoDBClient;
  close(): Promise<void>;
}

/** The credentials of a local DynamoDB from its secret (random, per data dir, or per start in memory). */
export function localDynamoCredentials(secret: Buffer): LocalCredentials {
  return localCredentials('LOCALDYNAMO', secret);
}

export async function startEmbeddedDynamo(options: {
  dataDir?: string;
  tableName: string;
  port?: number;
  /** Where its secret is kept: by default the data dir's (random per start in memory without one). */
  secretFile?: string;
  /** Whether a write has room on the disk (diskSpace.ts); by default the data dir's disk, less its reserve. */
  diskRoom?: DiskRoom;
}): Promise<EmbeddedDynamo> {
  const secretFile = options.secretFile ?? (options.dataDir && localDynamoSecretFile(options.dataDir));
  const path = options.dataDir && (await ownerOnlyDir(join(options.dataDir, 'dynamodb')));
  const server: Server = dynalite({
    ...(path ? { path } : {}),
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
  });
  const credentials = localDynamoCredentials(
    secretFile ? await loadOrCreateKey(secretFile) : randomBytes(32),
  );
  // dynalite checks no signature and answers any origin's CORS preflight: only our own clients, with our
  // credentials, get through.
  const gate = requireAwsJsonSignature(
    server,
    credentials,
    {
      region: LOCAL_DYNAMO_REGION,
      service: 'dynamodb',
      // DynamoDB's largest request: a batch write.
      maxBodyBytes: 16 * 1024 * 1024,
    },
    // LevelDB throws a failed write out of dynalite's callback, which ends the process (red team, round 27).
    options.diskRoom ?? (path ? diskRoom(path) : undefined),
  );
  serveOwnClientsOnly(server);
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const leaveOwnPorts = ownPorts.add(port);
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localDynamoClient(endpoint, credentials);
  await ensureTable(
    client,
    options.tableName,
    options.dataDir && join(options.dataDir, 'dynamodb-upgrade.json'),
  );
  return {
    endpoint,
    credentials,
    client,
    async close() {
      leaveOwnPorts();
      // No request is handed to dynalite any more, and those it has are answered, before its store closes: work on a
      // request whose client had gone (this client destroyed first) ran on into the closed store (CI, session 26).
      await gate.drain(ANSWERS_GRACE_MS);
      client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Dynalite runs in the server's own process, beside the handlers, the egress proxy and Chromium's traffic: under a
 * burst on a small machine a call can take a second or more (same-item writes queue behind one another), so the
 * local client waits longer than the deployed one before it gives up.
 */
const LOCAL_DYNAMO_TIMEOUTS: DynamoTimeouts = { connectionTimeout: 2_000, requestTimeout: 15_000 };

/** A client for a local endpoint, signing with the embedded DynamoDB's credentials. */
export function localDynamoClient(endpoint: string, credentials: LocalCredentials): DynamoDBClient {
  return createDynamoClient({ endpoint, region: LOCAL_DYNAMO_REGION, credentials }, LOCAL_DYNAMO_TIMEOUTS);
}

/** The secret of a data dir's DynamoDB: `npm run credits` reads it to reach the running service's table. */
export function localDynamoSecretFile(dataDir: string): string {
  return join(dataDir, 'secrets', 'dynamodb-secret.key');
}

/** The table as defined now: made when missing, and upgraded when a DATA_DIR of an earlier version lacks an index. */
async function ensureTable(client: DynamoDBClient, tableName: string, upgradeFile?: string): Promise<void> {
  if (upgradeFile && (await resumeUpgrade(client, tableName, upgradeFile))) return;
  const table = await client
    .send(new DescribeTableCommand({ TableName: tableName }))
    .then((described) => described.Table)
    .catch(() => undefined);
  if (table) {
    if (upgradeFile && !hasEveryIndex(table, tableName)) await upgradeTable(client, tableName, upgradeFile);
    return;
  }
  try {
    await client.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  // dynalite answers CreateTable with the table still CREATING and marks it ACTIVE on a later turn; until then every
  // item request is refused as ResourceNotFound (the credits CLI on a new DATA_DIR, CI under load).
  await tableSettled(client, tableName);
}
