import { KMSClient } from '@aws-sdk/client-kms';
import { z } from 'zod';
import type { ImageStore } from '../delivery/imageStore';
import { CachingSecretCipher } from '../signing/cachingSecretCipher';
import type { SecretCipher } from '../signing/secretCipher';
import { fileSecretCipher } from '../store/fileSecretCipher';
import { KmsSecretCipher } from '../store/kmsSecretCipher';
import { createS3Client, S3ImageStore } from '../store/s3ImageStore';

/**
 * Delivery settings (docs/api.md, "Local service"; the stack sets the deployed ones): the image bucket, the local S3
 * API's address, and what seals signing secrets: a KMS key deployed, a key file locally.
 */
const deliveryEnv = z.object({
  IMAGE_BUCKET: z.string().min(3).optional(),
  S3_ENDPOINT: z.url().optional(),
  LOCAL_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  LOCAL_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  SIGNING_KMS_KEY_ID: z.string().min(1).optional(),
  SIGNING_KEY_FILE: z.string().min(1).optional(),
});

/** The delivery ports of the screenshot use case. */
export function createDeliveryPorts(env: NodeJS.ProcessEnv): { images: ImageStore; cipher: SecretCipher } {
  return { images: createImageStore(env), cipher: createSecretCipher(env) };
}

function createImageStore(env: NodeJS.ProcessEnv): ImageStore {
  const config = deliveryEnv.parse(env);
  // No default: a bucket name is global, and a function the stack gave none must not store into someone else's.
  if (!config.IMAGE_BUCKET) return refusingImageStore;
  if (!config.S3_ENDPOINT) return new S3ImageStore(createS3Client(), config.IMAGE_BUCKET);
  // The local S3 API answers only requests signed with the secret of its data dir (local/embeddedS3.ts).
  if (!config.LOCAL_S3_ACCESS_KEY_ID || !config.LOCAL_S3_SECRET_ACCESS_KEY) {
    throw new Error('S3_ENDPOINT needs LOCAL_S3_ACCESS_KEY_ID and LOCAL_S3_SECRET_ACCESS_KEY');
  }
  const credentials = {
    accessKeyId: config.LOCAL_S3_ACCESS_KEY_ID,
    secretAccessKey: config.LOCAL_S3_SECRET_ACCESS_KEY,
  };
  return new S3ImageStore(createS3Client({ url: config.S3_ENDPOINT, credentials }), config.IMAGE_BUCKET);
}

/** The image store of a function given no bucket: every use fails loudly. */
const refusingImageStore: ImageStore = {
  put: refuseImages,
  head: refuseImages,
  get: refuseImages,
  pageMetadata: refuseImages,
  signedUrl: refuseImages,
  copyIfUnchanged: refuseImages,
};

async function refuseImages(): Promise<never> {
  throw new Error('No image bucket configured: set IMAGE_BUCKET');
}

/**
 * The signing-secret cipher. Functions that neither create keys nor verify links get neither setting; should one
 * of them ever seal or open, it fails loudly instead of storing a secret in clear.
 */
export function createSecretCipher(env: NodeJS.ProcessEnv): SecretCipher {
  const config = deliveryEnv.parse(env);
  if (config.SIGNING_KMS_KEY_ID) {
    return new CachingSecretCipher(new KmsSecretCipher(new KMSClient({}), config.SIGNING_KMS_KEY_ID));
  }
  if (config.SIGNING_KEY_FILE) return fileSecretCipher(config.SIGNING_KEY_FILE);
  const refuse = async (): Promise<never> => {
    throw new Error('No signing-secret cipher configured: set SIGNING_KMS_KEY_ID or SIGNING_KEY_FILE');
  };
  return { seal: refuse, open: refuse };
}
