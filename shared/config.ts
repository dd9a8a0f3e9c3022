import { z } from 'zod';
import { PAGE_MEMORY_LIMIT_MB } from './capture/memoryLimits';

/**
 * Deployment settings, read once per cold start from the environment. The names are part of the product
 * (docs/api.md, "Local service"); the deployed stack sets the same variables on each function.
 */
const envSchema = z.object({
  TABLE_NAME: z.string().min(3).default('screenshot-service'),
  RATE_LIMIT_PER_HOUR: z.coerce.number().int().min(1).default(100),
  FREE_CREDITS: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(100),
  MAX_CONCURRENT_CAPTURES: z.coerce.number().int().min(1).default(10),
  CAPTURE_HEADROOM: z.coerce.number().int().min(0).default(2),
  ALLOW_PRIVATE_HOSTS: z.string().default(''),
  PAGE_MEMORY_LIMIT_MB: z.coerce.number().int().min(64).default(PAGE_MEMORY_LIMIT_MB),
  SESSION_ISSUER: z.string().min(1).optional(),
  SESSION_CLIENT_ID: z.string().min(1).optional(),
  SESSION_JWKS_URI: z.string().url().optional(),
});

export interface ServiceConfig {
  tableName: string;
  rateLimitPerHour: number;
  freeCredits: number;
  /** Captures one account may have running at once (docs/api.md, "Concurrent captures"). */
  maxConcurrentCaptures: number;
  /**
   * Captures beyond LOCAL_MAX_CAPTURES, only for accounts with nothing running (docs/api.md, "Fair sharing of capture
   * capacity"): CAPTURE_HEADROOM, read by the local admission queue. Deployed, the headroom renderer's reserved
   * concurrency is the headroom.
   */
  captureHeadroom: number;
  /** Raw ALLOW_PRIVATE_HOSTS: '' (refuse all private), '*' (allow all), or 'host:port,host:port'. */
  allowPrivateHosts: string;
  /** PAGE_MEMORY_LIMIT_MB: what one capture's scripts and workers may hold in all, read by the renderer. */
  pageMemoryLimitMb: number;
}

export interface SessionConfig {
  issuer: string;
  clientId: string;
  jwksUri: string;
}

export function readServiceConfig(env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  const parsed = envSchema.parse(env);
  return {
    tableName: parsed.TABLE_NAME,
    rateLimitPerHour: parsed.RATE_LIMIT_PER_HOUR,
    freeCredits: parsed.FREE_CREDITS,
    maxConcurrentCaptures: parsed.MAX_CONCURRENT_CAPTURES,
    captureHeadroom: parsed.CAPTURE_HEADROOM,
    allowPrivateHosts: parsed.ALLOW_PRIVATE_HOSTS,
    pageMemoryLimitMb: parsed.PAGE_MEMORY_LIMIT_MB,
  };
}

/** Session-token settings: the Cognito pool deployed, the local identity provider locally. */
export function readSessionConfig(env: NodeJS.ProcessEnv = process.env): SessionConfig {
  const parsed = envSchema.parse(env);
  if (!parsed.SESSION_ISSUER || !parsed.SESSION_CLIENT_ID) {
    throw new Error('SESSION_ISSUER and SESSION_CLIENT_ID must be set');
  }
  return {
    issuer: parsed.SESSION_ISSUER,
    clientId: parsed.SESSION_CLIENT_ID,
    jwksUri: parsed.SESSION_JWKS_URI ?? `${parsed.SESSION_ISSUER}/.well-known/jwks.json`,
  };
}
