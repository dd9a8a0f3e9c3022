import type { RouteDefinition } from '../shared/routes';

/**
 * The DynamoDB actions each route's function may call on the table, and nothing else (docs/data-model.md, "Access
 * patterns"). Keyed by handler so a new route in shared/routes.ts does not compile until someone decides its grant.
 * Every key and credit route verifies the token and then grants the free credits once: an UpdateItem on the account.
 * An empty list means no table statement at all.
 */
export const TABLE_ACTIONS: Readonly<Record<RouteDefinition['handler'], readonly string[]>> = {
  // Key lookup and a signed link's signing item (GetItem); rate-limit window, credit reserve/refund, free grant,
  // lastUsed, capture slots and the usage day's totals (UpdateItem); the request's usage record and a refund that
  // failed, kept for an operator (PutItem); an async capture's Idempotency-Key record (GetItem, PutItem, UpdateItem,
  // and DeleteItem when the request was not accepted, so that it may be sent again with its key).
  screenshot: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
  // Query on the account's partition and the account item for the keys' lastUsed (GetItem); free grant.
  listKeys: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
  // keyCount (UpdateItem), listing, signing and authentication items (PutItem), undo of a half-made key (DeleteItem);
  // at the limit, the account item (GetItem) and its listings (Query) to give back slots of creates that died.
  createKey: [
    'dynamodb:GetItem',
    'dynamodb:Query',
    'dynamodb:UpdateItem',
    'dynamodb:PutItem',
    'dynamodb:DeleteItem',
  ],
  // Listing lookup (GetItem); revocation of both items and the free grant (UpdateItem).
  updateKey: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  // Listing and account lookup (GetItem); its items (DeleteItem); keyCount and the free grant (UpdateItem).
  deleteKey: ['dynamodb:GetItem', 'dynamodb:DeleteItem', 'dynamodb:UpdateItem'],
  // Balance (GetItem); free grant, and lapsed credit reservations given back (UpdateItem).
  getCredits: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  // The usage days and the keys (Query on the account's partition), with the account item the key list reads for
  // lastUsed (GetItem). A read-only route: no free grant.
  getUsage: ['dynamodb:GetItem', 'dynamodb:Query'],
  // The webhook-secret item (GetItem); its creation on first use (PutItem) and its rotation (UpdateItem), both
  // conditional. No free grant.
  webhookSecret: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  // The public API description is built from the schemas in code: no table access at all.
  getOpenApi: [],
  // Each tool call is a synchronous screenshot request: the screenshot route's grant but DeleteItem (no Idempotency-Key
  // records here); and a cancelled call's mark (PutItem), which the call reads (GetItem).
  mcp: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'],
  // Key lookup and the job (GetItem).
  getJob: ['dynamodb:GetItem'],
  // The latest jobs: a Query on the account's partition.
  listJobs: ['dynamodb:Query'],
  // Key lookup (GetItem); rate-limit window, credit reserve/refund, lastUsed (UpdateItem); the batch and its jobs,
  // and a refund kept for an operator (PutItem); jobs the queue refused, and their batch, are ended (UpdateItem);
  // the Idempotency-Key record, deleted when the request was not accepted (DeleteItem), as on the screenshot route.
  createBatch: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem'],
  // Key lookup and the batch (GetItem); its jobs (BatchGetItem).
  getBatch: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'],
};

/**
 * The queue worker (not a route): the job, its API key (still active?) and the batch (GetItem, BatchGetItem for a
 * batch's webhook), their state
 * changes, capture slots, refunds and the usage day's totals (UpdateItem), usage records, a refund kept for an
 * operator and an account's first webhook secret (PutItem).
 */
export const WORKER_TABLE_ACTIONS: readonly string[] = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:UpdateItem',
  'dynamodb:PutItem',
];
