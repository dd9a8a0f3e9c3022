import type { SessionVerifier } from '../auth/sessionVerifier';
import { ValidationError } from '../errors';
import type { KeyStore } from '../keys/keyStore';
import { validate } from '../validation';
import { DEFAULT_USAGE_DAYS, MAX_USAGE_DAYS, usageQuery } from './schemas';
import { DAY_MS, type DayTotals, dayStart, type UsageStore, utcDate } from './usageStore';

export interface UsageHistoryDeps {
  sessions: SessionVerifier;
  usage: Pick<UsageStore, 'days'>;
  keys: Pick<KeyStore, 'list'>;
  now?: () => number;
}

export interface DayUsage {
  /** YYYY-MM-DD, UTC. */
  date: string;
  captures: number;
  failed: number;
  cacheHits: number;
  credits: number;
}

export interface KeyUsage {
  keyId: string;
  /** The key's name; null once the key was deleted. */
  name: string | null;
  captures: number;
  credits: number;
}

export interface UsageReport {
  days: DayUsage[];
  byKey: KeyUsage[];
}

/** GET /api/usage: what the account spent, per UTC day and per key, over a window of at most MAX_USAGE_DAYS. */
export type GetUsage = (sessionToken: string | undefined, query: unknown) => Promise<UsageReport>;

/**
 * The usage history: the session token first (401), then the window (400), then one query of the day totals and
 * one of the key names. Every day of the window is in `days`, idle ones as zeros; `byKey` has each key that made
 * requests in the window, the most credits first, deleted keys included (their spending still counts).
 */
export function usageHistory(deps: UsageHistoryDeps): GetUsage {
  const now = deps.now ?? Date.now;
  return async (sessionToken, query) => {
    const accountId = await deps.sessions.accountIdOf(sessionToken);
    const dates = windowDates(query, now());
    const [stored, keys] = await Promise.all([
      deps.usage.days(accountId, dates[0] ?? '', dates[dates.length - 1] ?? ''),
      deps.keys.list(accountId),
    ]);
    const names = new Map(keys.map((key) => [key.id, key.name]));
    return { days: everyDay(dates, stored), byKey: keyTotals(stored, names) };
  };
}

/** The UTC dates the query covers, oldest first, or a ValidationError naming the parameter at fault. */
function windowDates(query: unknown, now: number): string[] {
  const { from, to = now } = validate(usageQuery, query, 'Invalid query parameters');
  if (from !== undefined && from > to) {
    throw new ValidationError(
      [{ code: 'invalid_range', path: ['from'], message: 'from must not be later than to (default: now)' }],
      'Invalid query parameters',
    );
  }
  const last = dayStart(to);
  const first = from === undefined ? last - (DEFAULT_USAGE_DAYS - 1) * DAY_MS : dayStart(from);
  const days = (last - first) / DAY_MS + 1;
  if (days > MAX_USAGE_DAYS) {
    throw new ValidationError(
      [
        {
          code: 'too_big',
          path: ['to'],
          message: `from and to may span at most ${MAX_USAGE_DAYS} days (UTC dates, both included); this spans ${days}`,
        },
      ],
      'Invalid query parameters',
    );
  }
  return Array.from({ length: days }, (_, i) => utcDate(first + i * DAY_MS));
}

function everyDay(dates: string[], stored: DayTotals[]): DayUsage[] {
  const byDate = new Map(stored.map((day) => [day.date, day]));
  return dates.map((date) => {
    const day = byDate.get(date);
    return {
      date,
      captures: day?.captures ?? 0,
      failed: day?.failed ?? 0,
      cacheHits: day?.cacheHits ?? 0,
      credits: day?.credits ?? 0,
    };
  });
}

function keyTotals(stored: DayTotals[], names: Map<string, string>): KeyUsage[] {
  const totals = new Map<string, KeyUsage>();
  for (const day of stored) {
    for (const [keyId, counts] of Object.entries(day.byKey)) {
      const key = totals.get(keyId) ?? { keyId, name: names.get(keyId) ?? null, captures: 0, credits: 0 };
      key.captures += counts.captures;
      key.credits += counts.credits;
      totals.set(keyId, key);
    }
  }
  // Key ids by their characters' codes: localeCompare follows the host's locale (LANG), which orders ids differently
  // from one machine to the next (red team, round 27).
  return [...totals.values()].sort(
    (a, b) =>
      b.credits - a.credits ||
      b.captures - a.captures ||
      (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0),
  );
}
