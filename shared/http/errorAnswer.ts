import { AppError } from '../errors';
import { logger } from '../logger';
import { type HttpResponse, jsonResponse } from './types';

/**
 * The one mapping from errors to HTTP answers: every AppError carries its own status, fields and headers. Two body
 * styles exist because the screenshot route answers `{ error, ... }` and the key-management routes
 * `{ message, ... }` (docs/api.md). A 5xx never carries internals: an unknown error is logged and answered with a
 * fixed message.
 */
export type ErrorStyle = 'screenshot' | 'management';

export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

export function errorAnswer(error: unknown, style: ErrorStyle, now = Date.now()): ErrorAnswer {
  const messageField = style === 'screenshot' ? 'error' : 'message';
  if (!(error instanceof AppError)) {
    logger.error('Unhandled error', { error: error instanceof Error ? error : String(error) });
    return { status: 500, headers: {}, body: { [messageField]: 'Internal server error' } };
  }
  return {
    status: error.status,
    headers: error.headers(now),
    body: { [messageField]: error.message, ...error.fields() },
  };
}

/** The error's whole HTTP answer: JSON, never cached, with `headers` (e.g. rate-limit headers) added. */
export function errorResponse(
  error: unknown,
  style: ErrorStyle,
  headers: Record<string, string> = {},
): HttpResponse {
  const answer = errorAnswer(error, style);
  return jsonResponse(answer.status, answer.body, { ...headers, ...answer.headers });
}
