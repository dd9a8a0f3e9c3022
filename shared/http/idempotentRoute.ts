import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { UnauthorizedError } from '../errors';
import type { KeyStore } from '../keys/keyStore';
import { authenticateApiKey } from '../screenshot/apiKeyAuth';
import { TABLE_SCHEMA } from '../store/table';
import { RESPONSE_RESERVE_MS } from '../timing';
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
  /** The single table, through Powertools' DynamoDB persistence layer. */
  client: DynamoDBClient;
  tableName: string;
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
 * refused request may be sent again with its key. Records live on the single table (pk IDEMPOTENCY, the key's
 * hash as sk) with the table's TTL. `applies` says which requests the header counts for (async captures only).
 */
export function idempotentRoute(
  route: HttpRoute,
  deps: IdempotencyDeps,
  applies: (request: HttpRequest) => boolean = () => true,
): HttpRoute {
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: deps.tableName,
    keyAttr: TABLE_SCHEMA.partitionKey,
    sortKeyAttr: TABLE_SCHEMA.sortKey,
    staticPkValue: 'IDEMPOTENCY',
    expiryAttr: TABLE_SCHEMA.ttlAttribute,
    awsSdkV3Client: deps.client,
  });
  /**
   * A first request is "being accepted" (409 to a retry) for as long as its function may still run: past that, it
   * crashed, and a retry may go ahead. Outside Lambda's handler wrapper, Powertools reads that from the context
   * registered here, so each request has a config of its own.
   */
  const configUntil = (deadline: number) => {
    const config = new IdempotencyConfig({
      eventKeyJmesPath: '[accountId, key]',
      payloadValidationJmesPath: 'body',
      expiresAfterSeconds: IDEMPOTENCY_SECONDS,
    });
    const runsUntil = deadline + RESPONSE_RESERVE_MS;
    config.registerLambdaContext({
      getRemainingTimeInMillis: () => Math.max(0, runsUntil - Date.now()),
    } as never);
    return config;
  };

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
    const accept = makeIdempotent(
      async (_payload: { accountId: string; key: string; body: unknown }): Promise<StoredAnswer> => {
        const answer = await route(request);
        if (answer.status !== 202) throw new NotKept(answer);
        return { status: answer.status, headers: answer.headers, body: answer.body.toString() };
      },
      { persistenceStore, config: configUntil(request.deadline), keyPrefix: deps.recordPrefix },
    );
    try {
      return await accept({ accountId: identity.accountId, key, body: parsedBody(request) });
    } catch (error) {
      if (error instanceof NotKept) return error.answer;
      if (error instanceof IdempotencyValidationError)
        return jsonResponse(422, { message: 'This Idempotency-Key was used with another body' });
      if (error instanceof IdempotencyAlreadyInProgressError)
        return jsonResponse(409, { message: 'A request with this Idempotency-Key is still being accepted' });
      throw error;
    }
  };
}

/** The body as JSON when it is JSON (so formatting does not make another body), its text otherwise. */
function parsedBody(request: HttpRequest): unknown {
  try {
    return JSON.parse(request.body);
  } catch {
    return request.body;
  }
}

/** POST /api/screenshot: the header counts for async captures only. */
export function asksForAsync(request: HttpRequest): boolean {
  return isAsyncBody(parsedBody(request));
}
