import type { CreditLedger } from '../../shared/accounts/creditLedger';
import {
  RATE_WINDOW_MS,
  type RateLimitDecision,
  type RateLimiter,
  windowStart,
} from '../../shared/accounts/rateLimiter';
import type { SessionVerifier } from '../../shared/auth/sessionVerifier';
import type { CaptureLimits, CaptureResult, CaptureSpec, Renderer } from '../../shared/capture/renderer';
import type { UrlPolicy } from '../../shared/egress/urlPolicy';
import {
  CaptureFailedError,
  InsufficientCreditsError,
  UnauthorizedError,
  ValidationError,
} from '../../shared/errors';
import type { ApiKeyRecord, KeyIdentity, KeyStore, NewKey } from '../../shared/keys/keyStore';
import {
  type DayTotals,
  isCapture,
  type UsageRecord,
  type UsageStore,
  utcDate,
} from '../../shared/usage/usageStore';

/**
 * In-memory implementations of the domain's ports, for rule tests that run in milliseconds. They keep the ports'
 * contracts (atomic conditional changes, newest-first lists, lookups by hash) without DynamoDB or Chromium; the
 * real adapters are proved against dynalite and real Chromium in the other suites.
 */

export class MemoryKeyStore implements KeyStore {
  private readonly records = new Map<string, ApiKeyRecord & { keyHash: string }>();

  async create(key: NewKey, maxKeys: number): Promise<boolean> {
    if ((await this.list(key.accountId)).length >= maxKeys) return false;
    this.records.set(key.id, { ...key, isActive: true, lastUsed: null });
    return true;
  }

  async list(accountId: string): Promise<ApiKeyRecord[]> {
    return [...this.records.values()]
      .filter((record) => record.accountId === accountId)
      .sort((a, b) => b.id.localeCompare(a.id))
      .map(({ keyHash: _, ...record }) => record);
  }

  async get(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    return (await this.list(accountId)).find((record) => record.id === keyId);
  }

  async revoke(accountId: string, keyId: string): Promise<boolean> {
    const record = this.records.get(keyId);
    if (record?.accountId !== accountId) return false;
    record.isActive = false;
    return true;
  }

  async delete(accountId: string, keyId: string): Promise<boolean> {
    if (this.records.get(keyId)?.accountId !== accountId) return false;
    return this.records.delete(keyId);
  }

  async findByHash(keyHash: string): Promise<KeyIdentity | undefined> {
    const record = [...this.records.values()].find((candidate) => candidate.keyHash === keyHash);
    return record && { accountId: record.accountId, keyId: record.id, isActive: record.isActive };
  }

  async touchLastUsed(identity: KeyIdentity, now: number): Promise<void> {
    const record = this.records.get(identity.keyId);
    if (record) record.lastUsed = now;
  }
}

export class MemoryCreditLedger implements CreditLedger {
  readonly balances = new Map<string, number>();
  private readonly granted = new Set<string>();
  /** Set to make the next refunds fail, as a store outage would. */
  failRefunds = false;

  async grantFreeCreditsOnce(accountId: string, amount: number): Promise<void> {
    if (this.granted.has(accountId)) return;
    this.granted.add(accountId);
    this.balances.set(accountId, (this.balances.get(accountId) ?? 0) + amount);
  }

  async balance(accountId: string): Promise<number> {
    return this.balances.get(accountId) ?? 0;
  }

  async reserve(accountId: string, cost: number): Promise<void> {
    const balance = await this.balance(accountId);
    if (balance < cost) throw new InsufficientCreditsError(cost, balance);
    this.balances.set(accountId, balance - cost);
  }

  async refund(accountId: string, cost: number): Promise<void> {
    if (this.failRefunds) throw new Error('store unavailable');
    this.balances.set(accountId, (await this.balance(accountId)) + cost);
  }

  async add(accountId: string, amount: number): Promise<number> {
    const balance = await this.balance(accountId);
    if (balance + amount < 0) throw new InsufficientCreditsError(-amount, balance);
    return this.set(accountId, balance + amount);
  }

  async set(accountId: string, amount: number): Promise<number> {
    this.balances.set(accountId, amount);
    return amount;
  }
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, number>();

  constructor(private readonly limit: number) {}

  async hit(accountId: string, now: number): Promise<RateLimitDecision> {
    const start = windowStart(now);
    const key = `${accountId}@${start}`;
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return {
      allowed: count <= this.limit,
      limit: this.limit,
      remaining: Math.max(0, this.limit - count),
      reset: start + RATE_WINDOW_MS,
    };
  }
}

/** Session tokens of the form `session:<accountId>`; anything else is refused as the real verifier would. */
export const fakeSessions: SessionVerifier = {
  async accountIdOf(token) {
    if (!token)
      throw new UnauthorizedError('Missing session token: send Authorization: Bearer <session token>');
    const match = /^session:(.+)$/.exec(token);
    if (!match?.[1]) throw new UnauthorizedError('Invalid session token');
    return match[1];
  },
};

/** Refuses URLs whose host is `blocked.test`, as the real policy refuses private addresses. */
export const fakeUrlPolicy: UrlPolicy = {
  async assertAllowed(url) {
    if (new URL(url).hostname === 'blocked.test') {
      throw new ValidationError([{ code: 'url_not_allowed', path: ['url'], message: 'blocked' }]);
    }
  },
};

/** A renderer that records what it was asked and answers with fixed bytes, or fails for URLs containing `fail`. */
export class FakeRenderer implements Renderer {
  readonly captures: { spec: CaptureSpec; limits: CaptureLimits }[] = [];
  settled = 0;

  async capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult> {
    this.captures.push({ spec, limits });
    if (spec.url.includes('fail')) throw new CaptureFailedError(spec.url, 'Navigation timed out');
    return {
      image: Buffer.from(`image of ${spec.url}`),
      truncated: spec.fullPage && spec.url.includes('tall'),
    };
  }

  async warmUp(): Promise<void> {}

  async settle(): Promise<void> {
    this.settled++;
  }

  async close(): Promise<void> {}
}

/** Keeps every usage record; day totals are summed from them when asked. */
export class MemoryUsageStore implements UsageStore {
  readonly records: UsageRecord[] = [];

  async add(record: UsageRecord): Promise<void> {
    this.records.push(record);
  }

  async days(accountId: string, fromDate: string, toDate: string): Promise<DayTotals[]> {
    const days = new Map<string, DayTotals>();
    for (const record of this.records) {
      const date = utcDate(record.at);
      if (record.accountId !== accountId || date < fromDate || date > toDate) continue;
      const day = days.get(date) ?? { date, captures: 0, failed: 0, cacheHits: 0, credits: 0, byKey: {} };
      const captured = isCapture(record.status) ? 1 : 0;
      day.captures += captured;
      day.failed += 1 - captured;
      day.cacheHits += record.cacheHit ? 1 : 0;
      day.credits += record.credits;
      const key = day.byKey[record.keyId] ?? { captures: 0, credits: 0 };
      key.captures += captured;
      key.credits += record.credits;
      day.byKey[record.keyId] = key;
      days.set(date, day);
    }
    return [...days.values()].sort((a, b) => a.date.localeCompare(b.date));
  }
}
