import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ListQueuesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localDynamoClient, startEmbeddedDynamo } from '../../local/embeddedDynamo';
import { type EmbeddedS3, startEmbeddedS3 } from '../../local/embeddedS3';
import { startLocalQueue } from '../../local/localQueue';
import { ownerOnlyDir } from '../../local/ownerOnlyDir';
import { createS3Client } from '../../shared/store/s3ImageStore';

/**
 * Other users of the same machine (docs/security.md treats them as a threat to the local S3 API, whose port has a
 * gate, and keeps the key files owner-only). Red team: the stored images and the table are plain files under
 * DATA_DIR, and with the usual umask (022) another user read every account's captures and the table from disk, past
 * the gate (confirmed as user `nobody` against `npm start`). Their folders are now owner-only (local/ownerOnlyDir.ts).
 */

const OTHERS_READ = 0o004;
const OTHERS_SEARCH = 0o001;

/** Whether another user (not owner, not group) could read `file`: every directory from dataDir down searchable, and the file readable. */
function othersCanRead(dataDir: string, file: string): boolean {
  if ((statSync(file).mode & OTHERS_READ) === 0) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & OTHERS_SEARCH) === 0) return false;
    if (dir === dataDir) return true;
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

describe('DATA_DIR against other users of the machine', () => {
  let parent: string;
  let dataDir: string;
  let s3: EmbeddedS3;
  const previousUmask = process.umask(0o022);

  beforeAll(async () => {
    // As a developer's shell has it; the service sets no mode of its own on these files.
    parent = mkdtempSync(join(tmpdir(), 'datadir-'));
    // Made as startLocalService makes DATA_DIR (mkdir, no mode): `.data/` in the developer's checkout.
    dataDir = join(parent, '.data');
    mkdirSync(dataDir, { recursive: true });
    s3 = await startEmbeddedS3({ dataDir });
  });
  afterAll(async () => {
    await s3?.close();
    process.umask(previousUmask);
    rmSync(parent, { recursive: true, force: true });
  });

  it("keeps a stored capture (another account's image) unreadable to other users", async () => {
    const client = createS3Client({
      url: s3.endpoint,
      credentials: {
        accessKeyId: s3.env.LOCAL_S3_ACCESS_KEY_ID,
        secretAccessKey: s3.env.LOCAL_S3_SECRET_ACCESS_KEY,
      },
    });
    await client.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: 'images/linked/victim/invoice',
        Body: Buffer.from('private capture'),
      }),
    );
    client.destroy();
    const stored = (await filesUnder(join(dataDir, 's3'))).filter((file) => file.endsWith('_S3rver_object'));
    expect(stored.length).toBeGreaterThan(0);
    const readable = stored
      .filter((file) => othersCanRead(dataDir, file))
      .map((file) => relative(dataDir, file));
    expect(readable).toEqual([]);
  });

  it('keeps the table (accounts, balances, key hashes, usage) unreadable to other users', async () => {
    const dynamo = await startEmbeddedDynamo({ dataDir, tableName: 'local-table' });
    await dynamo.close();
    const files = await filesUnder(join(dataDir, 'dynamodb'));
    expect(files.length).toBeGreaterThan(0);
    const readable = files
      .filter((file) => othersCanRead(dataDir, file))
      .map((file) => relative(dataDir, file));
    expect(readable).toEqual([]);
  });
});

describe('DATA_DIR itself', () => {
  it('is narrowed to its owner when an older run left it open', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'datadir-'));
    try {
      const dataDir = join(parent, '.data');
      mkdirSync(dataDir, { mode: 0o755 });
      await ownerOnlyDir(dataDir);
      expect(statSync(dataDir).mode & 0o077).toBe(0);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

/**
 * The embedded DynamoDB answers any local process that names 127.0.0.1 and sends no Origin (local/ownClients.ts).
 * Red team: dynalite checked no signature, so another user of the machine, reading the endpoint from
 * DATA_DIR/local-service.json, set any account's balance (curl with Signature=00). It now answers only requests
 * signed with its own secret (local/awsJsonSignatureGate.ts).
 */
describe('The embedded DynamoDB against other users of the machine', () => {
  it('refuses a request whose SigV4 signature is not valid, as the local S3 gate does', async () => {
    const dynamo = await startEmbeddedDynamo({ tableName: 'local-table' });
    try {
      const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const url = new URL(dynamo.endpoint);
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            method: 'POST',
            headers: {
              'Content-Type': 'application/x-amz-json-1.0',
              'X-Amz-Target': 'DynamoDB_20120810.ListTables',
              'X-Amz-Date': '20261126T225500Z',
              Authorization:
                'AWS4-HMAC-SHA256 Credential=anyone/20261126/local/dynamodb/aws4_request, SignedHeaders=host, Signature=00',
            },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              body += chunk;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
      expect(response.body).not.toContain('local-table');
      expect(response.status).toBeGreaterThanOrEqual(400);
    } finally {
      await dynamo.close();
    }
  });

  it('answers its own clients, and refuses one signing with other credentials', async () => {
    const dynamo = await startEmbeddedDynamo({ tableName: 'local-table' });
    const stranger = localDynamoClient(dynamo.endpoint, {
      accessKeyId: dynamo.credentials.accessKeyId,
      secretAccessKey: 'not-the-secret',
    });
    try {
      expect((await dynamo.client.send(new ListTablesCommand({}))).TableNames).toContain('local-table');
      await expect(stranger.send(new ListTablesCommand({}))).rejects.toMatchObject({
        name: 'InvalidSignatureException',
      });
    } finally {
      stranger.destroy();
      await dynamo.close();
    }
  });
});

/**
 * The local SQS API (fauxqs) checks no signature either: red team (dashboard round), another user of the machine
 * listed the queues and read their attributes, and could receive, delete or send job messages. It now answers only
 * requests signed with the queue's credentials, random per start (local/awsJsonSignatureGate.ts).
 */
describe('The local queue against other users of the machine', () => {
  it('answers its own clients, and refuses one signing with other credentials', async () => {
    const queue = await startLocalQueue({ visibilityTimeoutSeconds: 30 });
    const stranger = new SQSClient({
      endpoint: queue.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const guesser = new SQSClient({
      endpoint: queue.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: queue.credentials.accessKeyId, secretAccessKey: 'not-the-secret' },
    });
    try {
      expect((await queue.client.send(new ListQueuesCommand({}))).QueueUrls).toContain(queue.queueUrl);
      for (const client of [stranger, guesser]) {
        await expect(client.send(new ReceiveMessageCommand({ QueueUrl: queue.queueUrl }))).rejects.toThrow();
        await expect(client.send(new ListQueuesCommand({}))).rejects.toThrow();
      }
    } finally {
      stranger.destroy();
      guesser.destroy();
      await queue.close();
    }
  });
});
