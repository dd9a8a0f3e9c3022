import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY } from 'aws-cdk-lib/cx-api';
import { Construct, type IConstruct } from 'constructs';
import { EXPIRY_DAYS, EXPIRY_TAG, IMAGE_KINDS, IMAGE_PREFIX } from '../shared/delivery/imageStore';
import { JOB_RETENTION_MS } from '../shared/jobs/job';
import { JOB_CREDENTIALS_CONTEXT_PREFIX } from '../shared/jobs/jobCredentials';
import { KEY_ID_PREFIX } from '../shared/keys/apiKey';
import { CACHE_TTL } from '../shared/screenshot/schema';
import { IMAGE_LINK_LIFETIME_SECONDS } from '../shared/timing';
import { WEBHOOK_SECRET_CONTEXT_PREFIX } from '../shared/webhooks/webhookSecrets';

export interface ImageStorageProps {
  /** Reads and writes images, opens signing secrets. */
  screenshot: lambda.Function;
  /** Reads and writes images (its tools answer with links to them, and may use the cache); no signed links. */
  mcp: lambda.Function;
  /** Seals the signing secret of each new key. */
  createKey: lambda.Function;
}

const DAY_SECONDS = 86_400;
/** Whole days an object of each kind must outlive (lifecycle rules count in days), plus one day of margin. */
export const CACHE_EXPIRY_DAYS = Math.ceil(CACHE_TTL.max / DAY_SECONDS) + 1;
export const LINKED_EXPIRY_DAYS = Math.ceil(IMAGE_LINK_LIFETIME_SECONDS / DAY_SECONDS) + 1;
/** Async jobs' results: as long as their jobs, plus a day of margin. */
export const JOB_RESULT_EXPIRY_DAYS = Math.ceil(JOB_RETENTION_MS / 1000 / DAY_SECONDS) + 1;

/**
 * Delivery's storage (docs/api.md, "Delivery"): a private bucket for cached and linked images whose objects expire by
 * lifecycle rule, its access log bucket, and the KMS key that seals signing secrets. Least privilege: the screenshot
 * and MCP fronts may read and write the cache and the linked images, the screenshot front alone decrypt with the key;
 * key creation may only encrypt with it.
 */
export class ImageStorage extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogs: s3.Bucket;
  readonly signingKey: kms.Key;

  constructor(scope: Construct, id: string, props: ImageStorageProps) {
    super(scope, id);
    // Log delivery by bucket policy, not by the ACL the older default grants: ACLs stay disabled on both buckets.
    this.node.setContext(S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);

    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.bucket = new s3.Bucket(this, 'Images', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // SSE-S3: pre-signed GETs need no KMS permission of their own, and the ETag stays the MD5 of the bytes.
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'images/',
      lifecycleRules: [
        { id: 'CacheEntries', prefix: IMAGE_KINDS.cache, expiration: Duration.days(CACHE_EXPIRY_DAYS) },
        { id: 'LinkedImages', prefix: IMAGE_KINDS.linked, expiration: Duration.days(LINKED_EXPIRY_DAYS) },
        { id: 'JobResults', prefix: IMAGE_KINDS.job, expiration: Duration.days(JOB_RESULT_EXPIRY_DAYS) },
        // Each object expires by its own tag (its cacheTtl); the two rules above catch objects stored untagged.
        ...EXPIRY_DAYS.map((days) => ({
          id: `ExpiresAfter${days}Days`,
          prefix: IMAGE_PREFIX,
          tagFilters: { [EXPIRY_TAG]: String(days) },
          expiration: Duration.days(days),
        })),
        { id: 'IncompleteUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      // Images are re-creatable, but a stack deletion should not take customers' stored links with it unasked.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.signingKey = new kms.Key(this, 'SigningSecretsKey', {
      description: 'Seals the signing secrets of API keys (signed links)',
      enableKeyRotation: true,
      // Without it no stored signing secret can be opened again: every signed link would stop working.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // The cache and the linked images: the front never reads or writes a job's result (the worker stores it, the job
    // routes link to it), so a front taken over cannot replace one.
    const frontKinds = [IMAGE_KINDS.cache, IMAGE_KINDS.linked].map(
      (kind) => `${this.bucket.bucketArn}/${kind}*`,
    );
    const fronts = [props.screenshot, props.mcp];
    for (const front of fronts) this.grantFrontImages(front, frontKinds);
    // Signing secrets are sealed under their key's id (`key_…`) as encryption context: these grants open and seal
    // those only, never a webhook secret sealed with the same key.
    const onlySigningSecrets = { StringLike: { 'kms:EncryptionContext:keyId': `${KEY_ID_PREFIX}*` } };
    props.screenshot.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'OpenSigningSecrets',
        actions: ['kms:Decrypt'],
        resources: [this.signingKey.keyArn],
        conditions: onlySigningSecrets,
      }),
    );
    props.createKey.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'SealSigningSecrets',
        actions: ['kms:Encrypt'],
        resources: [this.signingKey.keyArn],
        conditions: onlySigningSecrets,
      }),
    );
    props.screenshot.addEnvironment('SIGNING_KMS_KEY_ID', this.signingKey.keyArn);
    props.createKey.addEnvironment('SIGNING_KMS_KEY_ID', this.signingKey.keyArn);

    acknowledge(
      this.accessLogs,
      'S1',
      'This is the access log bucket of the image bucket; logging it into itself would loop.',
    );
    for (const fn of fronts) {
      if (!fn.role) continue;
      for (const kind of [IMAGE_KINDS.cache, IMAGE_KINDS.linked])
        acknowledge(
          fn.role,
          `IAM5[Resource::<${idOf(this.bucket)}.Arn>/${kind}*]`,
          'Objects are named by account and request hash at run time; the grant is limited to one kind of image.',
        );
    }
  }

  /**
   * A front's images: the cache and the linked images under `kinds`, read and written, the bucket's names listed
   * (without ListBucket S3 answers a missing object 403 instead of 404, and a cache miss would look like a fault),
   * and the bucket named in its environment.
   */
  private grantFrontImages(front: lambda.Function, kinds: string[]): void {
    front.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ImageObjects',
        // PutObjectTagging: S3 asks for it when a PutObject carries tags (the expiry tag).
        actions: ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging'],
        resources: kinds,
      }),
    );
    front.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ImageLookups',
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
      }),
    );
    front.addEnvironment('IMAGE_BUCKET', this.bucket.bucketName);
  }

  /**
   * Lets `fn` seal or open, with the signing key, only what is sealed under `purpose`'s encryption context: webhook
   * secrets (`webhook-secret:<accountId>`), or the data keys of queued requests' credentials
   * (`job-credentials:<accountId>`); never a key's signing secret, nor the other purpose's.
   */
  grantSealed(fn: lambda.Function, purpose: SealedPurpose, actions: readonly SealingAction[]): void {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: SEALED_PURPOSES[purpose].sid,
        actions: [...actions],
        resources: [this.signingKey.keyArn],
        conditions: { StringLike: { 'kms:EncryptionContext:keyId': `${SEALED_PURPOSES[purpose].prefix}*` } },
      }),
    );
    fn.addEnvironment('SIGNING_KMS_KEY_ID', this.signingKey.keyArn);
  }
}

/** What the signing key seals besides signing secrets, each under an encryption context of its own. */
const SEALED_PURPOSES = {
  webhookSecrets: { sid: 'WebhookSecrets', prefix: WEBHOOK_SECRET_CONTEXT_PREFIX },
  jobCredentials: { sid: 'JobCredentials', prefix: JOB_CREDENTIALS_CONTEXT_PREFIX },
} as const;
export type SealedPurpose = keyof typeof SEALED_PURPOSES;

/** Sealing (a new webhook secret, an accepted job's data key) and opening (signing a delivery, running the job). */
export type SealingAction = 'kms:Encrypt' | 'kms:Decrypt';

function idOf(bucket: s3.Bucket): string {
  return bucket.stack.getLogicalId(bucket.node.defaultChild as s3.CfnBucket);
}

function acknowledge(scope: IConstruct, rule: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-${rule}`, reason });
}
