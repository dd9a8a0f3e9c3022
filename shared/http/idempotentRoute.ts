import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyItemNotFoundError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import { UnauthorizedError } from '../errors';
import type { KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import { authenticateApiKey } from '../screenshot/apiKeyAuth';
import { isAsyncBody, isWellFormedIdempotencyKey } from './idempotencyKey';
import { bearerCredential } from './request';
import { type HttpRequest, type HttpResponse, type HttpRoute, jsonResponse } from './types';

/** How long an Idempotency-Key answers with its first answer (docs/api.md, "Idempotency"). */
export const IDEMPOTENCY_SECONDS = 24 * 60 * 60;

/** The stored answer: what a replay answers. */
interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An answer that is not to be kept (anything but an acceptance): thrown so the record is removed, then answered. */
class NotKept extends Error {
  constructor(readonly answer: HttpResponse) {
    super('not kept');
  }
}

export interface IdempotencyDeps {
  keys: KeyStore;
  /** Where an account's records are kept: Powertools' persistence layer over the table (store/idempotencyRecords.ts). */
  records: (accountId: string) => BasePersistenceLayer;
  /** What the route's records are named under (idempotencyRecordPrefix). */
  recordPrefix: string;
}

/**
 * The records of one route never answer another's: deployed, each route is a function of its own, whose name
 * Powertools puts before its records (kept, so records made before this existed still answer); in one process
 * (`npm start`), the route's name does (red team: an async capture's key and body answered a batch request with that
 * capture's job).
 */
export function idempotencyRecordPrefix(env: NodeJS.ProcessEnv, route: string): string {
  return env.AWS_LAMBDA_FUNCTION_NAME || `local.${route}`;
}

/**
 * Idempotency-Key on a route that accepts jobs (docs/api.md, "Idempotency"): per account, the same key and body
 * within 24 hours answer the first acceptance again (nothing more is charged or queued), the same key with another
 * body 422, and the same key while the first is still being accepted 409. Only acceptances (202) are kept: a
 * refused request may be sent again with its key. Records live where `deps.records` keeps them (a partition per
 * account of the single table). `applies` says which requests the header counts for (async captures only).
 */
export function idempotentRoute(
  route: HttpRoute,
  deps: IdempotencyDeps,
  applies: (request: HttpRequest) => boolean = () => true,
): HttpRoute {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: '[accountId, key]',
    payloadValidationJmesPath: 'body',
    expiresAfterSeconds: IDEMPOTENCY_SECONDS,
  });
  // A first request that has not answered is "being accepted" (409 to a retry) for its record's whole life, not only
  // for its function's time: one that died after its acceptance, or whose record could not be completed, would
  // otherwise be accepted, and charged, a second time by a later retry (red team). Whether it was accepted is then
  // not known, so it is never accepted again under that key. (Outside Lambda's handler wrapper, Powertools reads the
  // in-progress time from the context registered here.)
  // Up to 1,000 s more, at random (to a fraction of a millisecond): each request's record carries an in-progress expiry
  // of its own, by which it knows its own write from another's (idempotencyRecords.ts). Two requests with one key in
  // the same millisecond otherwise wrote the same value, and both were accepted (red team).
  config.registerLambdaContext({
    getRemainingTimeInMillis: () => IDEMPOTENCY_SECONDS * 1000 + Math.random() * 1_000_000,
  } as never);

  return async (request) => {
    const key = request.headers['idempotency-key'];
    if (key === undefined || !applies(request)) return route(request);
    // The route refuses it (withIdempotencyKeyChecked) where its other fields are refused: after the key and the
    // rate limit, as a counted and recorded 400 with the rate-limit headers.
    if (!isWellFormedIdempotencyKey(key)) return route(request);
    // Not authenticated: the route gives its own 401. Any other failure (the store out of reach) goes up as it is:
    // running the route unguarded could accept a retry of an acceptance that went through.
    const identity = await authenticateApiKey(bearerCredential(request), deps.keys).catch(
      (error: unknown) => {
        if (error instanceof UnauthorizedError) return undefined;
        throw error;
      },
    );
    if (!identity) return route(request);
    const persistenceStore = deps.records(identity.accountId);
    /** The acceptance, once the route made it: the jobs are written, queued and charged. */
    let accepted: StoredAnswer | undefined;
    /** The route's refusal, whose record is to go. */
    let refused: HttpResponse | undefined;
    /** Whether the route was asked: not when the record could not be written. */
    let ran = false;
    const accept = makeIdempotent(
      async (_payload: IdempotentPayload): Promise<StoredAnswer> => {
        ran = true;
        const answer = await route(request);
        if (answer.status !== 202) {
          refused = answer;
          throw new NotKept(answer);
        }
        accepted = { status: answer.status, headers: answer.headers, body: answer.body.toString() };
        return accepted;
      },
      { persistenceStore, config, keyPrefix: deps.recordPrefix },
    );
    const payload: IdempotentPayload = { accountId: identity.accountId, key, body: parsedBody(request) };
    try {
      return await accept(payload);
    } catch (error) {
      if (error instanceof NotKept) return error.answer;
      const { deadline } = request;
      const removal = () => persistenceStore.deleteRecord(payload as never);
      // The acceptance went through and only its record could not be completed: it is still the answer (a 500 would
      // have the client retry something already charged; red team). Its record is tried again, so that a retry
      // gets it back instead of a second acceptance once this request's time is over.
      if (error instanceof IdempotencyPersistenceLayerError && accepted) {
        const answer = accepted;
        // Both are plain JSON, as makeIdempotent saved them; its types want JSONValue's index signature.
        await writeAgain(
          () => persistenceStore.saveSuccess(payload as never, answer as never),
          deadline,
          'Idempotency-Key record of an acceptance not completed: its key answers 409 for a day',
        );
        return { ...answer, body: Buffer.from(answer.body) };
      }
      // Likewise a refusal whose record could not be removed: it is still the answer (red team: a 402 answered 500,
      // and its key 409 for a day), and the record is removed again, so that the request may be sent again.
      if (error instanceof IdempotencyPersistenceLayerError && refused) {
        await writeAgain(
          removal,
          deadline,
          'Idempotency-Key record of a refusal not removed: its key answers 409 for a day',
        );
        return refused;
      }
      // The record's write failed, or its answer was lost though it landed: the route never ran, nothing was
      // accepted. The record, if it is there, goes (it is this request's alone), so that a retry is not answered 409
      // for a day (red team); the failure is still the answer.
      if (error instanceof IdempotencyPersistenceLayerError && !ran) {
        await writeAgain(
          removal,
          deadline,
          'Idempotency-Key record of a request never run not removed: its key answers 409 for a day',
        );
        throw error;
      }
      if (error instanceof IdempotencyValidationError)
        return jsonResponse(422, { message: 'This Idempotency-Key was used with another body' });
      // A record stood in the way and was gone when read (its request was refused meanwhile): DynamoDB hands back
      // the record it found, and that is the same 409; dynalite does not (red team, round 22: a 500 at will).
      if (error instanceof IdempotencyAlreadyInProgressError || error instanceof IdempotencyItemNotFoundError)
        return jsonResponse(409, {
          message:
            'A request with this Idempotency-Key is still being accepted, or ended without an answer: see GET /api/jobs, and use a new key if it is not there',
        });
      throw error;
    }
  };
}

interface IdempotentPayload {
  accountId: string;
  key: string;
  body: unknown;
}

/** Waits before each further try of a record's write, while the request has time. */
const RECORD_RETRY_DELAYS_MS = [100, 400, 1_000, 2_000];

/**
 * Tries a record's write again after it failed (a throttled or unreachable table for a moment), until it is done or
 * the request's time is up; `failure` is logged when it never was.
 */
async function writeAgain(write: () => Promise<void>, deadline: number, failure: string): Promise<void> {
  for (const delayMs of RECORD_RETRY_DELAYS_MS) {
    if (Date.now() + delayMs >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    try {
      await write();
      return;
    } catch {
      // The next try, if there is time.
    }
  }
  logger.error(failure);
}

/**
 * The body as JSON when it is JSON (so formatting does not make another body), its text otherwise. Powertools sorts
 * its keys and writes it again to hash it, both recursively: a body nested deeper than any valid request (thousands
 * of levels, from a few KB) ran them out of stack, a 500 (red team). Such a body is kept as its text, for the route to
 * refuse.
 */
function parsedBody(request: HttpRequest): unknown {
  try {
    const parsed: unknown = JSON.parse(request.body);
    return nestedDeeperThan(parsed, MAX_HASHED_DEPTH) ? request.body : parsed;
  } catch {
    return request.body;
  }
}

/** Far deeper than any valid request nests (a batch's cookies are four levels down). */
const MAX_HASHED_DEPTH = 64;

/** Whether `value` nests objects or arrays more than `limit` levels deep; walked without recursion. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const pending: { at: unknown; depth: number }[] = [{ at: value, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.at === null || typeof next.at !== 'object') continue;
    if (next.depth >= limit) return true;
    for (const child of Object.values(next.at)) pending.push({ at: child, depth: next.depth + 1 });
  }
  return false;
}

/** POST /api/screenshot: the header counts for async captures only. */
export function asksForAsync(request: HttpRequest): boolean {
  return isAsyncBody(parsedBody(request));
}
