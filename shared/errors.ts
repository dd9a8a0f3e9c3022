/**
 * Domain errors. Each carries what its HTTP answer needs; `shared/http/errorResponse.ts` is the one place that
 * turns them into status codes and bodies. Anything that is not one of these becomes a generic 500.
 */

/** One validation problem, in the shape of the spec's 400 `details[]`. */
export interface ValidationDetail {
  code: string;
  path: (string | number)[];
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class ValidationError extends AppError {
  constructor(
    readonly details: ValidationDetail[],
    message = 'Invalid request',
  ) {
    super(400, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'Unauthorized') {
    super(401, message);
  }
}

export class InsufficientCreditsError extends AppError {
  constructor(
    readonly required: number,
    readonly available: number,
  ) {
    super(402, 'Insufficient credits');
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found') {
    super(404, message);
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(readonly allow: string[]) {
    super(405, 'Method not allowed');
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(readonly limitBytes: number) {
    super(413, `Request body is larger than ${limitBytes} bytes`);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor() {
    super(415, 'Content-Type must be application/json');
  }
}

export class RateLimitedError extends AppError {
  constructor(
    readonly limit: number,
    readonly reset: number,
  ) {
    super(429, 'Rate limit exceeded');
  }
}

/** The capture itself failed; the 500 body names the URL and a short, safe reason. */
export class CaptureFailedError extends AppError {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(500, 'Screenshot capture failed');
  }
}

/** Too many captures in flight on this instance (local server); the caller may retry. */
export class OverloadedError extends AppError {
  constructor() {
    super(503, 'Service is busy, try again shortly');
  }
}

/** The data store could not be reached or did not answer in time; the request had no effect and may be retried. */
export class StoreUnavailableError extends AppError {
  constructor() {
    super(503, 'Service temporarily unavailable, try again shortly');
  }
}
