import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConflictError } from '../errors';
import type { SecretCipher } from '../signing/secretCipher';
import {
  generateWebhookSecret,
  ROTATION_OVERLAP_MS,
  WEBHOOK_SECRET_CONTEXT_PREFIX,
  type WebhookSecrets,
} from '../webhooks/webhookSecrets';
import { conditionHeld, itemKey } from './table';

interface WebhookSecretItem {
  sealedSecret: string;
  sealedPreviousSecret?: string;
  rotatedAt?: number;
}

/** Concurrent rotations of one account each try this often before the owner is asked to try again. */
const ROTATE_TRIES = 3;
/**
 * A rotation that starts within this long of the last one answers that one's secret instead of rotating again: sent
 * together (two tabs, a double submit, a script that retries), a rotation whose read came just after another's write
 * rotated on top of it, and a third pushed the first one's answer out of the signing pair (red team, round 20: ten at
 * once over HTTP answered three or four secrets, two of which never signed).
 */
export const ROTATIONS_AGREE_MS = 1_000;

/**
 * The webhook secrets of an account as one item under its partition (docs/data-model.md), sealed by the same
 * cipher as signing secrets with `webhook-secret:<accountId>` as encryption context, so a sealed value opens only as
 * this account's webhook secret. Every write is conditional on the item as it was read: two first uses at once
 * create one secret, rotations at once (or within ROTATIONS_AGREE_MS) agree on one new secret, and none loses the
 * secret a receiver has.
 */
export class DynamoWebhookSecrets implements WebhookSecrets {
  constructor(
    private readonly db: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly cipher: SecretCipher,
  ) {}

  async reveal(accountId: string, now: number): Promise<string> {
    const item = await this.read(accountId);
    if (item) return this.open(accountId, item.sealedSecret);
    const secret = generateWebhookSecret();
    if (await this.create(accountId, secret, now)) return secret;
    // Another request created it first: that one is the secret. (dynalite never returns the item from a failed
    // condition, so it is read again; once created, the item changes only by a rotation.)
    const created = await this.read(accountId);
    if (!created) throw new ConflictError('The webhook secret changed meanwhile; try again');
    return this.open(accountId, created.sealedSecret);
  }

  async rotate(accountId: string, now: number): Promise<string> {
    for (let tried = 0; tried < ROTATE_TRIES; tried++) {
      const item = await this.read(accountId);
      if (item?.rotatedAt !== undefined && item.rotatedAt > now - ROTATIONS_AGREE_MS) {
        return this.open(accountId, item.sealedSecret);
      }
      const secret = generateWebhookSecret();
      if (!item) {
        if (await this.create(accountId, secret, now)) return secret;
        continue;
      }
      const replaced = await conditionHeld(
        this.db.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: itemKey.webhookSecret(accountId),
            UpdateExpression: 'SET sealedSecret = :new, sealedPreviousSecret = :old, rotatedAt = :now',
            ConditionExpression: 'sealedSecret = :old',
            ExpressionAttributeValues: {
              ':new': await this.cipher.seal(secret, context(accountId)),
              ':old': item.sealedSecret,
              ':now': now,
            },
          }),
        ),
      );
      if (replaced) return secret;
      // Another rotation of the same secret won: its new secret answers both. Rotating again on top of it would
      // displace a secret already handed out as the new one (ten at once left four 200s, two of them never signing).
      const after = await this.read(accountId);
      if (after?.sealedPreviousSecret === item.sealedSecret) return this.open(accountId, after.sealedSecret);
    }
    throw new ConflictError('The webhook secret is being rotated by another request; try again');
  }

  async signingSecrets(accountId: string, now: number): Promise<string[]> {
    const item = await this.read(accountId);
    if (!item) return [await this.reveal(accountId, now)];
    const current = await this.open(accountId, item.sealedSecret);
    const overlapping =
      item.sealedPreviousSecret !== undefined &&
      item.rotatedAt !== undefined &&
      now - item.rotatedAt < ROTATION_OVERLAP_MS;
    if (!overlapping || item.sealedPreviousSecret === undefined) return [current];
    return [current, await this.open(accountId, item.sealedPreviousSecret)];
  }

  private async read(accountId: string): Promise<WebhookSecretItem | undefined> {
    const { Item } = await this.db.send(
      new GetCommand({
        TableName: this.tableName,
        Key: itemKey.webhookSecret(accountId),
        ConsistentRead: true,
      }),
    );
    return Item as WebhookSecretItem | undefined;
  }

  /** True when this call created the account's first secret. */
  private async create(accountId: string, secret: string, now: number): Promise<boolean> {
    return conditionHeld(
      this.db.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...itemKey.webhookSecret(accountId),
            sealedSecret: await this.cipher.seal(secret, context(accountId)),
            createdAt: now,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  private async open(accountId: string, sealed: string): Promise<string> {
    const secret = await this.cipher.open(sealed, context(accountId));
    // Not authentic for this account: the table was changed behind our back. Never sign with it.
    if (secret === undefined) throw new Error('A webhook secret did not open');
    return secret;
  }
}

/** The encryption context: what the sealed value is, and whose. */
function context(accountId: string): string {
  return `${WEBHOOK_SECRET_CONTEXT_PREFIX}${accountId}`;
}
