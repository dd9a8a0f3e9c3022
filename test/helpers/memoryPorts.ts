import { randomBytes, randomUUID } from 'node:crypto';
import { type AdmissionPorts, admissionOverPorts } from '../../shared/accounts/admissionRound';
import {
  type CaptureSlots,
  linkSlotLimit,
  newLeaseId,
  poolOf,
  type SlotLease,
  type SlotPool,
} from '../../shared/accounts/captureSlots';
import {
  type CreditEpoch,
  type CreditLedger,
  MAX_BALANCE,
  type ReservationHold,
} from '../../shared/accounts/creditLedger';
import { type CreditReservation, lapsedReservations } from '../../shared/accounts/creditReservation';
import type { PendingRefund, PendingRefunds, RefundReturn } from '../../shared/accounts/pendingRefunds';
import {
  RATE_WINDOW_MS,
  type RateLimitDecision,
  type RateLimiter,
  windowStart,
} from '../../shared/accounts/rateLimiter';
import type { SessionVerifier } from '../../shared/auth/sessionVerifier';
import {
  CAPTURE_CONTENT_TYPES,
  type CaptureLimits,
  type CaptureResult,
  type CaptureSpec,
  type PageMetadata,
  type Renderer,
} from '../../shared/capture/renderer';
import {
  EXPIRY_DAYS,
  type ImageStore,
  type LinkTimes,
  type StoredImageInfo,
} from '../../shared/delivery/imageStore';
import type { UrlPolicy } from '../../shared/egress/urlPolicy';
import {
  BalanceOverflowError,
  CaptureFailedError,
  CaptureTimedOutError,
  ClientGoneError,
  InsufficientCreditsError,
  UnauthorizedError,
  ValidationError,
} from '../../shared/errors';
import type { ApiKeyRecord, KeyIdentity, KeyStore, NewKey, SigningKey } from '../../shared/keys/keyStore';
import type { CancellationMark, CancelledCalls } from '../../shared/mcp/cancelledCalls';
import type { ScreenshotDeps } from '../../shared/screenshot/captureScreenshot';
import { AesGcmSecretCipher } from '../../shared/signing/aesGcmSecretCipher';
import {
  type DayTotals,
  isCapture,
  type UsageRecord,
  type UsageStore,
  utcDate,
} from '../../shared/usage/usageStore';
import { InMemoryServiceMetrics } from './inMemoryMetrics';

/**
 * In-memory implementations of the domain's ports, for rule tests that run in milliseconds. They keep the ports'
 * contracts (atomic conditional changes, newest-first lists, lookups by hash) without DynamoDB or Chromium; the
 * real adapters are proved against dynalite and real Chromium in the other suites.
 */

export class MemoryKeyStore implements KeyStore {
  private readonly records = new Map<
    string,
    ApiKeyRecord & { keyHash: string; sealedSigningSecret: string }
  >();

  async create(key: NewKey, maxKeys: number): Promise<{ isActive: boolean } | undefined> {
    if ((await this.list(key.accountId)).length >= maxKeys) return undefined;
    this.records.set(key.id, { ...key, isActive: true, lastUsed: null });
    return { isActive: true };
  }

  async list(accountId: string): Promise<ApiKeyRecord[]> {
    return [...this.records.values()]
      .filter((record) => record.accountId === accountId)
      .sort((a, b) => b.id.localeCompare(a.id))
      .map(({ keyHash: _, sealedSigningSecret: __, ...record }) => record);
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

  async findById(accountId: string, keyId: string): Promise<KeyIdentity | undefined> {
    const record = this.records.get(keyId);
    return record?.accountId === accountId ? { accountId, keyId, isActive: record.isActive } : undefined;
  }

  async findSigningKey(keyId: string): Promise<SigningKey | undefined> {
    const record = this.records.get(keyId);
    return (
      record && {
        identity: { accountId: record.accountId, keyId, isActive: record.isActive },
        sealedSigningSecret: record.sealedSigningSecret,
      }
    );
  }

  /** The stored items as text, as a table dump would show them. */
  dump(): string {
    return JSON.stringify([...this.records.values()]);
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
    // Never on a balance an operator set, as the store's conditional grant.
    if (this.granted.has(accountId) || this.epochs.has(accountId)) return;
    this.granted.add(accountId);
    this.balances.set(accountId, (this.balances.get(accountId) ?? 0) + amount);
  }

  /** Lapsed reservations are given back by `reserve` alone: the rule tests' clocks are not the wall clock. */
  async balance(accountId: string): Promise<number> {
    return this.balances.get(accountId) ?? 0;
  }

  /** Each account's CreditEpoch: how many times its balance was set. */
  private readonly epochs = new Map<string, CreditEpoch>();

  async reserve(accountId: string, cost: number, hold?: ReservationHold): Promise<CreditEpoch> {
    // Read and written in one turn, as the store's conditional write is atomic: parallel reserves never lose one.
    if (hold) this.reapLapsed(accountId, hold.now);
    const balance = this.balances.get(accountId) ?? 0;
    if (balance < cost) throw new InsufficientCreditsError(cost, balance);
    this.balances.set(accountId, balance - cost);
    const epoch = this.epochs.get(accountId) ?? 0;
    if (hold) {
      this.reservationsOf(accountId).set(hold.id, { id: hold.id, until: hold.until, cost, epoch });
    }
    return epoch;
  }

  /** Each account's reservations, by id, as the account item keeps them. */
  readonly reservations = new Map<string, Map<string, CreditReservation>>();

  private reservationsOf(accountId: string): Map<string, CreditReservation> {
    const held = this.reservations.get(accountId) ?? new Map<string, CreditReservation>();
    this.reservations.set(accountId, held);
    return held;
  }

  async chargeReservation(accountId: string, reservationId: string): Promise<void> {
    this.reservationsOf(accountId).delete(reservationId);
  }

  async refundReservation(accountId: string, reservation: CreditReservation): Promise<boolean> {
    if (this.failRefunds) throw new Error('store unavailable');
    return this.giveReserved(accountId, reservation);
  }

  /** Removes a reservation, giving its credits back in its epoch: in one turn, as the store's one write. */
  private giveReserved(accountId: string, reservation: CreditReservation): boolean {
    if (!this.reservationsOf(accountId).delete(reservation.id)) return false;
    if (!this.inEpoch(accountId, reservation.epoch)) return false;
    this.balances.set(accountId, (this.balances.get(accountId) ?? 0) + reservation.cost);
    return true;
  }

  private reapLapsed(accountId: string, now: number): void {
    const lapsed = lapsedReservations([...this.reservationsOf(accountId).values()], now);
    for (const reservation of lapsed) this.giveReserved(accountId, reservation);
  }

  async refund(accountId: string, cost: number, epoch?: CreditEpoch): Promise<void> {
    if (this.failRefunds) throw new Error('store unavailable');
    if (!this.inEpoch(accountId, epoch)) return;
    this.balances.set(accountId, (this.balances.get(accountId) ?? 0) + cost);
  }

  /** Refunds given once and not yet forgotten, as `${accountId} ${refundId}`. */
  readonly refundMarks = new Set<string>();

  async refundOnce(accountId: string, cost: number, refundId: string, epoch?: CreditEpoch): Promise<boolean> {
    const mark = `${accountId} ${refundId}`;
    if (this.refundMarks.has(mark) || !this.inEpoch(accountId, epoch)) return false;
    await this.refund(accountId, cost);
    this.refundMarks.add(mark);
    return true;
  }

  private inEpoch(accountId: string, epoch: CreditEpoch | undefined): boolean {
    return epoch === undefined || epoch === (this.epochs.get(accountId) ?? 0);
  }

  async forgetRefund(accountId: string, refundId: string): Promise<void> {
    this.refundMarks.delete(`${accountId} ${refundId}`);
  }

  async add(accountId: string, amount: number): Promise<number> {
    const balance = await this.balance(accountId);
    if (balance + amount < 0) throw new InsufficientCreditsError(-amount, balance);
    return this.balanceTo(accountId, balance + amount);
  }

  async set(accountId: string, amount: number): Promise<number> {
    const balance = this.balanceTo(accountId, amount);
    this.epochs.set(accountId, (this.epochs.get(accountId) ?? 0) + 1);
    return balance;
  }

  private balanceTo(accountId: string, amount: number): number {
    if (!Number.isSafeInteger(amount) || amount < 0 || amount > MAX_BALANCE) {
      throw new BalanceOverflowError(MAX_BALANCE);
    }
    this.balances.set(accountId, amount);
    return amount;
  }
}

/** Leases per account, lapsing at their expiry, as the DynamoDB adapter keeps them. */
export class MemoryCaptureSlots implements CaptureSlots {
  private readonly leases = new Map<string, Map<string, number>>();
  private nextId = 0;

  constructor(readonly limit: number) {}

  async acquire(
    accountId: string,
    now: number,
    expiresAt: number,
    pool?: SlotPool,
  ): Promise<SlotLease | undefined> {
    const held = this.leases.get(accountId) ?? new Map<string, number>();
    for (const [id, expiry] of held) if (expiry <= now) held.delete(id);
    if (held.size >= this.limit) return undefined;
    const links = [...held.keys()].filter((id) => poolOf(id) === 'signedLink').length;
    if (pool === 'signedLink' && links >= linkSlotLimit(this.limit)) return undefined;
    const leaseId = pool === 'signedLink' ? newLeaseId(pool) : String(++this.nextId);
    const newcomer = held.size === 0;
    held.set(leaseId, expiresAt);
    this.leases.set(accountId, held);
    return { leaseId, newcomer };
  }

  async release(accountId: string, leaseId: string, penaltyUntil?: number): Promise<void> {
    const held = this.leases.get(accountId);
    if (penaltyUntil === undefined) held?.delete(leaseId);
    else if (held?.has(leaseId)) held.set(leaseId, penaltyUntil);
  }

  /** Leases the account holds (lapsed ones included until someone reaps them), or those not lapsed at `at`. */
  held(accountId: string, at?: number): number {
    const leases = [...(this.leases.get(accountId)?.values() ?? [])];
    return at === undefined ? leases.length : leases.filter((expiry) => expiry > at).length;
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

/**
 * A renderer that records what it was asked and answers with fixed bytes, or fails for URLs containing `fail`.
 * Captures of URLs containing `slow` wait until `finishSlow()`, or fail as the real one does when the client hangs up.
 */
export class FakeRenderer implements Renderer {
  readonly captures: { spec: CaptureSpec; limits: CaptureLimits }[] = [];
  settled = 0;
  private slow: (() => void)[] = [];

  async capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult> {
    this.captures.push({ spec, limits });
    if (spec.url.includes('slow')) {
      await new Promise<void>((resolve, reject) => {
        this.slow.push(resolve);
        limits.signal?.addEventListener('abort', () => reject(new ClientGoneError()), { once: true });
      });
    }
    if (spec.url.includes('pagefault'))
      throw new CaptureFailedError(spec.url, 'No element matches the click selector #x', 'page');
    if (spec.url.includes('fail')) throw new CaptureFailedError(spec.url, 'Navigation timed out');
    if (spec.url.includes('timeout'))
      throw new CaptureTimedOutError(spec.url, 'The page did not load within 30 s');
    return {
      image: fakePng(spec.width, spec.fullPage ? spec.height * 2 : spec.height, spec.url),
      contentType: CAPTURE_CONTENT_TYPES[spec.format],
      truncated: spec.fullPage && spec.url.includes('tall'),
      ...(spec.metadata ? { metadata: fakeMetadata(spec.url) } : {}),
    };
  }

  /** Lets every waiting `slow` capture finish. */
  finishSlow(): void {
    for (const resolve of this.slow.splice(0)) resolve();
  }

  async warmUp(): Promise<void> {}

  async settle(): Promise<void> {
    this.settled++;
  }

  async close(): Promise<void> {}
}

/** What a page at `url` with nothing in its head says about itself. */
function fakeMetadata(url: string): PageMetadata {
  return {
    title: null,
    description: null,
    lang: null,
    canonicalUrl: null,
    finalUrl: url,
    statusCode: 200,
    favicon: null,
    openGraph: {},
    twitter: {},
  };
}

/**
 * Bytes that read as a PNG of the given size (signature and IHDR chunk, all that size readers look at), followed by
 * a note naming what was captured, so two captures of different pages differ.
 */
export function fakePng(width: number, height: number, note: string): Buffer {
  const header = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header, 0);
  header.writeUInt32BE(13, 8);
  header.write('IHDR', 12, 'ascii');
  header.writeUInt32BE(width, 16);
  header.writeUInt32BE(height, 20);
  header.writeUInt8(8, 24);
  header.writeUInt8(2, 25);
  return Buffer.concat([header, Buffer.from(`image of ${note}`)]);
}

/** Images in a Map; `signedUrl` gives a `memory:` address that names the key and the lifetime. */
export class MemoryImageStore implements ImageStore {
  readonly objects = new Map<string, { image: Buffer; info: StoredImageInfo }>();
  /** Calls by kind, to prove what a request did (a 304 never reads the bytes). */
  readonly calls = { put: 0, head: 0, get: 0, pageMetadata: 0 };

  async put(key: string, image: Buffer, info: StoredImageInfo): Promise<void> {
    this.calls.put++;
    this.objects.set(key, { image, info });
  }

  async head(key: string): Promise<StoredImageInfo | undefined> {
    this.calls.head++;
    return this.objects.get(key)?.info;
  }

  async get(key: string, maxBytes = Number.POSITIVE_INFINITY) {
    this.calls.get++;
    const object = this.objects.get(key);
    return object && object.image.length > maxBytes ? { info: object.info } : object;
  }

  async pageMetadata(key: string): Promise<PageMetadata | undefined> {
    this.calls.pageMetadata++;
    return this.objects.get(key)?.info.metadata;
  }

  async signedUrl(key: string, link: LinkTimes): Promise<string> {
    return `memory://${key}?expires=${link.seconds}`;
  }

  async copyIfUnchanged(from: string, to: string, etag: string, storedAt: number, expiresAt: number) {
    const source = this.objects.get(from);
    if (source?.info.etag !== etag) return false;
    const kept = this.objects.get(to)?.info;
    if (kept?.etag === etag && kept.storedAt + EXPIRY_DAYS[0] * 86_400_000 >= expiresAt) return true;
    const { metadata: _, ...info } = source.info;
    this.objects.set(to, { image: source.image, info: { ...info, storedAt, expiresAt } });
    return true;
  }
}

/**
 * Every port of the screenshot use case in memory; a test passes the ones it looks at, the admission round's separate
 * ports included.
 */
export function memoryScreenshotDeps(
  overrides: Partial<ScreenshotDeps & Omit<AdmissionPorts, 'keys' | 'credits'>> = {},
): ScreenshotDeps {
  const { rateLimiter, signedLinkBudget, captureSlots, ...rest } = overrides;
  const keys = rest.keys ?? new MemoryKeyStore();
  const credits = rest.credits ?? new MemoryCreditLedger();
  return {
    keys,
    credits,
    admissions: admissionOverPorts({
      keys,
      credits,
      rateLimiter: rateLimiter ?? new MemoryRateLimiter(100),
      signedLinkBudget: signedLinkBudget ?? new MemoryRateLimiter(100),
      captureSlots: captureSlots ?? new MemoryCaptureSlots(10),
    }),
    renderer: new FakeRenderer(),
    urlPolicy: fakeUrlPolicy,
    images: new MemoryImageStore(),
    cipher: new AesGcmSecretCipher(randomBytes(32)),
    usage: { record: () => undefined },
    metrics: new InMemoryServiceMetrics(),
    pendingRefunds: new MemoryPendingRefunds(),
    ...rest,
  };
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

/** Failed refunds kept in a list, as an operator would find them. */
export class MemoryPendingRefunds implements PendingRefunds {
  readonly pending: PendingRefund[] = [];

  async record(refund: PendingRefund): Promise<void> {
    this.pending.push(refund);
  }

  async list(): Promise<PendingRefund[]> {
    return [...this.pending];
  }

  async giveBack(): Promise<RefundReturn> {
    throw new Error('not used by the rule tests');
  }
}

/** The cancelled MCP calls, in memory: when each was cancelled. */
export class MemoryCancelledCalls implements CancelledCalls {
  private readonly marks = new Map<string, string>();

  async mark(accountId: string, requestId: string): Promise<void> {
    this.marks.set(`${accountId} ${requestId}`, randomUUID());
  }

  async latest(accountId: string, requestId: string): Promise<CancellationMark> {
    return this.marks.get(`${accountId} ${requestId}`);
  }
}
