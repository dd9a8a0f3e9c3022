/**
 * Domain errors. Each one carries its own answer: the status, the fields its JSON body adds beside the message,
 * and any headers. `shared/http/errorAnswer.ts` is the one place that turns them into HTTP answers; anything that
 * is not an AppError becomes a generic 500.
 */

/** One validation problem, in the shape of the 400 body's `details[]` (docs/api.md). */
export interface ValidationDetail {
  code: string;
  path: (string | number)[];
  message: string;
  /** The path as one name, like `requests[3].width`: given where a body nests requests (batches). */
  field?: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** Fields the JSON body carries beside its message. */
  fields(): Record<string, unknown> {
    return {};
  }

  /** Headers the answer carries; `now` is ms since epoch. */
  headers(_now: number): Record<string, string> {
    return {};
  }
}

/** The status an error is answered with: its own for an AppError, 500 for anything else. */
export function statusOf(error: unknown): number {
  return error instanceof AppError ? error.status : 500;
}

/**
 * The most details a 400 answers: a body of many small bad entries (90,000 header values that are numbers in a batch's
 * 1 MiB) made a 15 MB answer, more than a buffered Lambda function returns (red team). Past it, one last detail counts
 * the rest.
 */
const MAX_ANSWERED_DETAILS = 1_000;

export class ValidationError extends AppError {
  constructor(
    readonly details: ValidationDetail[],
    message = 'Invalid request',
  ) {
    super(400, message);
  }

  override fields() {
    if (this.details.length <= MAX_ANSWERED_DETAILS) return { details: this.details };
    const more = this.details.length - MAX_ANSWERED_DETAILS;
    return {
      details: [
        ...this.details.slice(0, MAX_ANSWERED_DETAILS),
        { code: 'too_many_problems', path: [], message: `… and ${more} more problems` },
      ],
    };
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

  override fields() {
    return { required: this.required, available: this.available };
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

  override headers() {
    return { Allow: this.allow.join(', ') };
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

/** A key deleted by its owner while it was being created: it never works, and the create answers this. */
export class KeyDeletedWhileCreatedError extends ConflictError {
  constructor() {
    super('The API key was deleted while it was being created; create another');
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
    /** When the caller may try again, ms since epoch. */
    readonly reset: number,
    message = 'Rate limit exceeded',
  ) {
    super(429, message);
  }

  override fields() {
    return { limit: this.limit, reset: this.reset };
  }

  override headers(now: number) {
    return { 'Retry-After': String(Math.max(1, Math.ceil((this.reset - now) / 1000))) };
  }
}

/** The account already runs as many captures as it may at once; one more may start a second later. */
export class TooManyCapturesError extends RateLimitedError {
  constructor(limit: number, now: number) {
    super(limit, now + 1_000, 'Too many captures in progress for this account');
  }
}

/**
 * Every renderer this capture may use is at its reserved concurrency (Lambda throttled the invocation at once): the
 * capture never started. Not an answer of its own: the use case answers it as TooManyCapturesError, the same 429 as
 * the account's bound (docs/api.md, "Fair sharing of capture capacity").
 */
export class CapacityFullError extends Error {
  override readonly name = 'CapacityFullError';
}

/** nginx's "client closed request": the status a request whose client left before it had its answer is recorded with. */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * The client hung up before its image was delivered: the capture is stopped and nothing is charged. Nobody reads
 * this answer; its status only labels the request in the log and its usage record.
 */
export class ClientGoneError extends AppError {
  constructor() {
    super(CLIENT_CLOSED_REQUEST, 'The client closed the connection');
  }
}

/** An operator change would take a balance past the largest whole number stored exactly. */
export class BalanceOverflowError extends AppError {
  constructor(readonly max: number) {
    super(400, `A balance cannot exceed ${max}`);
  }
}

/**
 * Whose fault a failed capture is: the customer's `page` (unreachable, too slow, an error status with
 * failOnHttpError, a selector that matches nothing, a crash it caused) or the `service`'s (the browser would not start
 * or stopped, anything unexplained). Alarms and rollbacks count only the service's.
 */
export type CaptureFault = 'page' | 'service';

/** The capture itself failed; the 500 body names the URL and a short, safe reason. */
export class CaptureFailedError extends AppError {
  constructor(
    readonly url: string,
    readonly reason: string,
    readonly fault: CaptureFault = 'service',
  ) {
    super(500, 'Screenshot capture failed');
  }

  override fields() {
    return { url: this.url, message: this.reason };
  }
}

/**
 * The capture ran out of its time budget (the page did not load, a selector never showed, a script held the page):
 * the same 500, and its account's slot is held for a while after (docs/api.md, "Fair sharing of capture capacity").
 */
export class CaptureTimedOutError extends CaptureFailedError {}

/** A 503: the request had no effect and passes quickly, so clients are told to come back soon rather than give up. */
abstract class RetrySoonError extends AppError {
  constructor(message: string) {
    super(503, message);
  }

  override headers() {
    return { 'Retry-After': '1' };
  }
}

/** Too many captures in flight on this instance (local server); the caller may retry. */
export class OverloadedError extends RetrySoonError {
  constructor() {
    super('Service is busy, try again shortly');
  }
}

/** The local server is still starting (store, browser, identity provider); it answers once ready. */
export class StartingError extends RetrySoonError {
  constructor() {
    super('Service is starting, try again shortly');
  }
}

/** The data store could not be reached or did not answer in time; the request had no effect and may be retried. */
export class StoreUnavailableError extends RetrySoonError {
  constructor() {
    super('Service temporarily unavailable, try again shortly');
  }
}
