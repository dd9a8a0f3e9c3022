import {
  AppError,
  CaptureFailedError,
  InsufficientCreditsError,
  MethodNotAllowedError,
  RateLimitedError,
  ValidationError,
} from '../errors';
import { logger } from '../logger';

/**
 * The one mapping from errors to HTTP answers. Two body styles exist because the spec gives the screenshot route
 * `{ error, ... }` and the key-management routes `{ message, ... }`. A 5xx never carries internals: an unknown
 * error is logged and answered with a fixed message.
 */
export type ErrorStyle = 'screenshot' | 'management';

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export function errorAnswer(error: unknown, style: ErrorStyle): ErrorAnswer {
  if (!(error instanceof AppError)) {
    logger.error('Unhandled error', { error: error instanceof Error ? error : String(error) });
    return { status: 500, headers: {}, body: { [messageField(style)]: 'Internal server error' } };
  }
  const body: Record<string, unknown> = { [messageField(style)]: error.message };
  const headers: Record<string, string> = {};
  if (error instanceof ValidationError) body.details = error.details;
  if (error instanceof InsufficientCreditsError)
    Object.assign(body, { required: error.required, available: error.available });
  if (error instanceof RateLimitedError) {
    Object.assign(body, { limit: error.limit, reset: error.reset });
    headers['Retry-After'] = String(Math.max(1, Math.ceil((error.reset - Date.now()) / 1000)));
  }
  if (error instanceof CaptureFailedError) Object.assign(body, { url: error.url, message: error.reason });
  if (error instanceof MethodNotAllowedError) headers.Allow = error.allow.join(', ');
  // Busy or store unavailable: both pass quickly, so tell clients to come back soon rather than give up.
  if (error.status === 503) headers['Retry-After'] = '1';
  return { status: error.status, headers, body };
}

function messageField(style: ErrorStyle): 'error' | 'message' {
  return style === 'screenshot' ? 'error' : 'message';
}
