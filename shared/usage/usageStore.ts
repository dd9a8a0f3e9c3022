/**
 * Usage: one record per screenshot request that passed authentication (docs/api.md, "Usage"), and per-day totals
 * of each account that answer the usage history with one query (docs/data-model.md).
 */

/** Day totals, which answer the usage history, are kept this long; the store deletes them by TTL. */
export const USAGE_RETENTION_DAYS = 90;
/**
 * Each request's own record is kept this long: no answer reads it (the day totals do), so it stays only as long as an
 * operator may want to look into a recent request (docs/data-model.md, "Usage").
 */
export const USAGE_RECORD_RETENTION_DAYS = 7;

export const DAY_MS = 24 * 60 * 60 * 1000;

/** One screenshot request of an authenticated caller. */
export interface UsageRecord {
  accountId: string;
  keyId: string;
  /** When the request came in, ms since epoch; its UTC date is the day it counts for. */
  at: number;
  /** The HTTP status it was answered with. */
  status: number;
  /** Credits it cost (0 unless an image was delivered). */
  credits: number;
  /** Answered from the image cache. */
  cacheHit: boolean;
  /** From the request's arrival to its answer being ready, ms. */
  durationMs: number;
  /** The host (and port, if not the default) of the requested URL; never its path or query. */
  host?: string;
  /** Present when the request came through the MCP server rather than the REST API. */
  via?: 'mcp';
}

/** Counts of one key on one day. */
export interface KeyTotals {
  captures: number;
  credits: number;
}

/** Totals of one account on one UTC day. */
export interface DayTotals {
  /** YYYY-MM-DD, UTC. */
  date: string;
  /** Requests answered with an image (status below 400), cache hits included. */
  captures: number;
  /** Requests answered with an error (status 400 and above). */
  failed: number;
  cacheHits: number;
  credits: number;
  /** The same day's captures and credits per key id. */
  byKey: Record<string, KeyTotals>;
}

/** Port for usage persistence; `shared/store/dynamoUsageStore.ts` is the DynamoDB adapter. */
export interface UsageStore {
  /** Keeps the record and adds it to its day's totals; the totals stay exact under concurrent adds. */
  add(record: UsageRecord): Promise<void>;
  /** The account's day totals from `fromDate` to `toDate` (YYYY-MM-DD, inclusive), oldest first; idle days absent. */
  days(accountId: string, fromDate: string, toDate: string): Promise<DayTotals[]>;
}

/** The UTC date of a moment, YYYY-MM-DD. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Midnight UTC of the day `ms` falls on. */
export function dayStart(ms: number): number {
  return ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
}

/** True for statuses that count as a capture rather than a failure. */
export function isCapture(status: number): boolean {
  return status < 400;
}
