import { createHash } from 'node:crypto';
import type { AdmissionAsk, AdmissionRound } from '../accounts/admissionRound';
import type { CreditEpoch, CreditLedger } from '../accounts/creditLedger';
import { FullWindows } from '../accounts/fullWindows';
import type { PendingRefunds } from '../accounts/pendingRefunds';
import type { RateLimitDecision } from '../accounts/rateLimiter';
import { giveCreditsBack, giveReservationBack, keepReservedCredits } from '../accounts/refund';
import { asLongAgain, slotPenaltyUntil } from '../accounts/slotPenalty';
import type { CaptureSpec, Renderer } from '../capture/renderer';
import {
  type DeliveryRequest,
  imageDelivery,
  keptInCache,
  type Screenshot,
  SIGNED_LINK_INLINE_HIT_BYTES,
} from '../delivery/imageDelivery';
import type { ImageStore } from '../delivery/imageStore';
import { assertAllowedAt, type UrlPolicy } from '../egress/urlPolicy';
import {
  CapacityFullError,
  CaptureFailedError,
  CLIENT_CLOSED_REQUEST,
  ClientGoneError,
  RateLimitedError,
  TooManyCapturesError,
  UnauthorizedError,
} from '../errors';
import type { KeyIdentity, KeyStore } from '../keys/keyStore';
import { logger } from '../logger';
import type { CaptureOutcome, ServiceMetrics } from '../metrics/serviceMetrics';
import type { SecretCipher } from '../signing/secretCipher';
import { CAPTURE_BUDGET_MS } from '../timing';
import type { UsageRecorder } from '../usage/usageRecorder';
import type { UsageRecord } from '../usage/usageStore';
import { validate } from '../validation';
import { type Admission, IMMEDIATE_ADMISSION } from './admission';
import { authenticateApiKey } from './apiKeyAuth';
import { deliveryRequestOf } from './cacheKey';
import { captureSpecOf } from './captureSpec';
import { creditCost } from './cost';
import { outcomeStatus, type ScreenshotOutcome } from './outcome';
import { givenBack, type QueueCapture, type QueuedJob } from './queuedCaptures';
import { type ScreenshotRequest, screenshotRequest } from './schema';
import { authenticateSignedLink, type SignedCredential } from './signedLinkAuth';
import { refuseOnSignedLink } from './signedLinkFields';
import { usageOf } from './usageOf';

export type { Screenshot } from '../delivery/imageDelivery';

export interface ScreenshotDeps {
  keys: KeyStore;
  /**
   * The rate limit (the account's API window, or a signed link's own budget per key), the capture slot, the credit
   * reservation and lastUsed, asked in one round.
   */
  admissions: AdmissionRound;
  /** Where failed captures' credits go back. */
  credits: CreditLedger;
  renderer: Renderer;
  urlPolicy: UrlPolicy;
  /** Where authenticated captures wait for their turn (the local queue); by default they run at once. */
  admission?: Admission;
  /**
   * Where authenticated requests wait to be validated and looked up in the cache (the local server's second queue);
   * by default at once. What needs no capture is then answered without waiting for `admission`.
   */
  lookups?: Admission;
  /** The time one capture has from admission; CAPTURE_BUDGET_MS unless a test wants it shorter. */
  captureBudgetMs?: number;
  /**
   * How long after a capture's deadline its answer may still be on its way: the local server's slowest delivery;
   * deployed, the function's timeout ends it (ANSWERED_WITHIN_MS). Its credits' reservation waits that long.
   */
  answeredWithinMs?: number;
  /** Cached and linked images. */
  images: ImageStore;
  /** Opens the signing secrets of signed links. */
  cipher: SecretCipher;
  /** Takes the usage record of every request that passed authentication. */
  usage: UsageRecorder;
  /** Business metrics of every answered request; refunds that failed are counted there too. */
  metrics: ServiceMetrics;
  /** Where a refund that could not be written is kept for an operator. */
  pendingRefunds: PendingRefunds;
  /** Where `async: true` captures go (the job table and queue); an async request is refused without it. */
  queueCapture?: QueueCapture;
  now?: () => number;
}

/** Who the caller says they are: an API key (Bearer), or a signed link naming a key. */
export type ScreenshotCredential = { apiKey: string | undefined } | { signed: SignedCredential };

export type ScreenshotInput = ScreenshotCredential & {
  /**
   * The request's fields, read only when the order of checks reaches validation, so a bad body never hides a 401
   * or a 429. It may throw the body's own errors (413, 415, malformed JSON).
   */
  request: () => unknown;
  /** When the capture must be over, ms since epoch. */
  deadline: number;
  /** Aborted when the caller stopped waiting. */
  signal?: AbortSignal;
  /** The caller's If-None-Match header: answered with 304 when it names the cached image. */
  ifNoneMatch?: string;
  /** The entry other than the REST API the request came through, for the usage record. */
  via?: UsageRecord['via'];
};

const NOTHING_TO_GIVE_BACK = async () => false;

/** A request validated (or refused) and looked up in the cache, before any capture place. */
interface Prepared {
  checked:
    | { valid: { fields: ScreenshotRequest; spec: CaptureSpec; delivering: DeliveryRequest } }
    | { invalid: unknown };
  /** An async capture, answered once accepted. */
  queued: boolean;
  cached: Screenshot | undefined;
}

/** Only a valid synchronous request the cache did not answer needs a capture place. */
function needsCapture({ checked, queued, cached }: Prepared): boolean {
  return 'valid' in checked && !queued && cached === undefined;
}

export type CaptureScreenshot = (input: ScreenshotInput) => Promise<ScreenshotOutcome>;

/**
 * One screenshot, in the order of checks docs/api.md fixes: authenticate (401), count against the rate limit
 * (429), answer from the cache (200 or 304, free), take one of the account's capture slots within its fair share of
 * the capacity (429), validate (400), reserve credits (402), capture (200, or 500 with the credits given back), store
 * it for the cache or a link. Only authenticated requests wait for admission, and the capture's time budget runs
 * from there. A client that hangs up stops the capture and is not charged. Every answer is counted in the metrics, and every request that passed
 * authentication leaves a usage record.
 */
export function captureScreenshot(deps: ScreenshotDeps): CaptureScreenshot {
  // Read at each call, not once: a clock moved under a running service (tests of cache expiry) is the one it uses.
  const now = deps.now ?? (() => Date.now());
  const admission = deps.admission ?? IMMEDIATE_ADMISSION;
  const lookups = deps.lookups ?? IMMEDIATE_ADMISSION;
  const budgetMs = deps.captureBudgetMs ?? CAPTURE_BUDGET_MS;
  const { admissions } = deps;
  const delivery = imageDelivery({ images: deps.images, now });
  const fullWindows = new FullWindows();
  const refundDeps = {
    credits: deps.credits,
    pendingRefunds: deps.pendingRefunds,
    metrics: deps.metrics,
    now,
  };

  return async (input) => {
    const at = now();
    let identity: KeyIdentity;
    try {
      identity = await authenticate(input);
    } catch (error) {
      const refused: ScreenshotOutcome = { ok: false, error };
      deps.metrics.captureFinished(metricOf(refused, now() - at, input.via));
      return refused;
    }
    const request = readOnce(input.request);
    const queuedAt = now();
    let placed = false;
    // The API window's 429 comes first of all: a window this process saw full refuses before any other work, waiting
    // for a place (the local queue's) included.
    const outcome =
      (!('signed' in input) && (await refusedWhenSpent(identity, 'api'))) ||
      (await inTurn(identity, { ...input, request }, queuedAt, () => {
        placed = true;
      }).catch((error): ScreenshotOutcome => ({ ok: false, error })));
    const durationMs = now() - at;
    deps.metrics.captureFinished(metricOf(outcome, durationMs, input.via));
    // A queued job's usage is recorded when it finishes, as a capture's is (shared/jobs/runJob.ts).
    if (outcome.ok && 'queued' in outcome) return outcome;
    // A client that left while its request waited for a place (the local queue, which stands in for Lambda starting
    // a function) never reached the window either: no record, as deployed (red team, round 22: records the window
    // never counted).
    if (!placed && !outcome.ok && outcome.error instanceof ClientGoneError) return outcome;
    // A key revoked while its request waited fails as any 401 does, with no record (red team, round 31: it left one).
    if (!outcome.ok && outcome.error instanceof UnauthorizedError) return outcome;
    const record = usageOf(identity, outcome, { at, durationMs }, request);
    if (input.via) record.via = input.via;
    // Written once the answer is settled, with the charge of what the capture reserved.
    deps.usage.record(record, outcome.ok && 'screenshot' in outcome ? outcome.settled : undefined);
    if (!outcome.ok) return outcome;
    return {
      ...outcome,
      // The client never had the image: nothing is charged, unless the cache keeps it for the account, and the
      // record (written after the answer) says so: a hang-up, not a capture (red team, round 22: usage counted them).
      undelivered: async () => {
        const givenBack = await outcome.undelivered();
        if (givenBack) Object.assign(record, { credits: 0, status: CLIENT_CLOSED_REQUEST });
        return givenBack;
      },
    };
  };

  /**
   * The request in its turns (the local queues; deployed, at once): validated and looked up in the cache in the
   * lookups' turn, then answered, after a turn of the capture queue only when it needs a capture. A cache hit, a
   * `400` and an async acceptance wait behind no capture (red team, round 30: locally, a free account's failing
   * captures in every place kept another account's hits waiting up to a minute). The capture's time budget runs from
   * the lookup, without either wait.
   */
  async function inTurn(
    identity: KeyIdentity,
    input: ScreenshotInput,
    queuedAt: number,
    onPlaced: () => void,
  ): Promise<ScreenshotOutcome> {
    const { accountId } = identity;
    const pool = 'signed' in input ? 'signedLink' : 'api';
    // An async capture is only accepted here, and runs from the job queue: it waits for no place (the local queue's),
    // as deployed. Waiting behind others, its Idempotency-Key could outlive its "being accepted".
    const async = asksAsync(input.request);
    let lookedUpFrom = queuedAt;
    const prepared = await (async ? IMMEDIATE_ADMISSION : lookups).run(
      accountId,
      async (waited) => {
        lookedUpFrom = now();
        // A key revoked or deleted while its request waited (the local queue) fails it as it would a new one, before
        // any of its work: the owner was told the key fails from the next request (red team: a leaked key's queued
        // requests were captured and charged minutes after its revocation). Deployed, nothing waits.
        if (waited) await authenticate(input);
        return prepare(identity, input);
      },
      input.signal,
      pool,
    );
    const preparedAt = now();
    // Counted and recorded from here, whatever its client does; a client that left while its request waited for a
    // place (either queue) never reached the window: no record, as deployed (red team, round 22).
    const answer = (waitedForCapture: boolean) => {
      onPlaced();
      const captureWait = now() - preparedAt;
      const budget = { from: lookedUpFrom + captureWait, waitedMs: lookedUpFrom - queuedAt + captureWait };
      return admitted(identity, input, prepared, budget, waitedForCapture);
    };
    // A client gone while its request was validated or looked up waits for no capture place: it is counted, and
    // ends as a hang-up does (review, session 31: refused before the window counted it, it held a lookups' place
    // for nothing). Nor does a signed link whose budget this process knows spent: it is refused at once.
    const spentLink = 'signed' in input && fullWindows.refusal(identity, 'signedLink', now()) !== undefined;
    if (!needsCapture(prepared) || input.signal?.aborted || spentLink) return answer(false);
    return admission.run(accountId, answer, input.signal, pool);
  }

  /**
   * Validation, which needs no store but may wait on DNS (the URL policy resolves the host), and, for a request that
   * asks for the cache, its look there (the image store, not the table): both come before admission, so that
   * admission is one round (one write of the account item, deployed). With the key's lookup that is two sequential
   * round trips before the renderer is asked. The verdicts keep the order of checks (401, 429, cache, slot 429, 400,
   * 402).
   */
  async function prepare(identity: KeyIdentity, input: ScreenshotInput): Promise<Prepared> {
    const { accountId } = identity;
    const checked = await specOf(
      // A signed link is for an <img> tag: it asks for the cache unless it says `cache=false`, and it is public.
      'signed' in input
        ? () => refuseOnSignedLink(withDefaults(input.request(), { cache: true }))
        : input.request,
      deps.urlPolicy,
    ).then(
      // How it is delivered, with its cache key, worked out once for the cache lookup and the delivery.
      (valid) => {
        const delivering = deliveryRequestOf(accountId, valid.fields);
        // A signed link's large hits send its visitors to the stored file: they are free to whoever holds it.
        if ('signed' in input) delivering.inlineHitBytes = SIGNED_LINK_INLINE_HIT_BYTES;
        return { valid: { ...valid, delivering } };
      },
      (error: unknown) => ({ invalid: error }),
    );
    // An async capture is answered before it runs: it takes no slot now, and looks in no cache.
    const queued = 'valid' in checked ? checked.valid.fields.async === true : asksAsync(input.request);
    const cached =
      'valid' in checked && !queued ? await lookInCache(accountId, checked.valid, input) : undefined;
    return { checked, queued, cached };
  }

  /** A cache hit is no capture: it takes no slot and reserves nothing. A lookup that fails is a miss. */
  function lookInCache(
    accountId: string,
    valid: { fields: ScreenshotRequest; delivering: DeliveryRequest },
    input: ScreenshotInput,
  ): Promise<Screenshot | undefined> {
    return delivery
      .fromCache(accountId, valid.delivering, input.ifNoneMatch)
      .then((hit) => hit && withCredentialsMark(hit, valid.fields))
      .catch(() => undefined);
  }

  /** Who sends the request: its key, or the key that signed its link (401 when neither is valid and active). */
  function authenticate(input: ScreenshotInput): Promise<KeyIdentity> {
    return 'signed' in input
      ? authenticateSignedLink(input.signed, deps.keys, deps.cipher)
      : authenticateApiKey(input.apiKey, deps.keys);
  }

  /** Queues an admitted async capture; when that fails, its credits go back. */
  async function accept(
    identity: KeyIdentity,
    checked: { valid: { fields: ScreenshotRequest } } | { invalid: unknown },
    cost: number | undefined,
    creditEpoch: CreditEpoch,
  ): Promise<QueuedJob> {
    if ('invalid' in checked) throw checked.invalid;
    const { async: _, webhookUrl, ...request } = checked.valid.fields;
    try {
      if (!deps.queueCapture) throw new Error('Async captures are not wired');
      return await deps.queueCapture(identity, { request, cost: cost ?? 0, creditEpoch }, { webhookUrl });
    } catch (error) {
      const back = givenBack(error, cost ?? 0);
      if (back.credits > 0) await giveCreditsBack(refundDeps, identity.accountId, back.credits, creditEpoch);
      throw back.error;
    }
  }

  /** The rate limit's refusal of a request counted against a window this process saw full (FullWindows), if any. */
  async function refusedWhenSpent(
    identity: KeyIdentity,
    budget: AdmissionAsk['budget'],
  ): Promise<ScreenshotOutcome | undefined> {
    const spent = fullWindows.refusal(identity, budget, now());
    if (!spent) return undefined;
    await deps.keys
      .touchLastUsed(identity, now())
      .catch((error) => logger.warn('lastUsed not recorded', { error }));
    return { ok: false, error: new RateLimitedError(spent.limit, spent.reset), rateLimit: spent };
  }

  async function admitted(
    identity: KeyIdentity,
    input: ScreenshotInput,
    prepared: Prepared,
    budgetOf: { from: number; waitedMs: number },
    waitedForCapture: boolean,
  ): Promise<ScreenshotOutcome> {
    let rateLimit: RateLimitDecision | undefined;
    try {
      // A key revoked while its request waited for a capture place fails it too.
      if (waitedForCapture) await authenticate(input);
      // Time spent waiting for admission is not the runtime's: deployed there is no such wait, and locally the
      // queue stands in for Lambda starting another function.
      const deadline = Math.min(budgetOf.from + budgetMs, input.deadline + budgetOf.waitedMs);
      const { accountId } = identity;
      // A signed link spends its key's own budget, never the account's API window.
      const budget = 'signed' in input ? 'signedLink' : 'api';
      const { checked, queued } = prepared;
      // An entry another request stored while this one waited for a capture place answers it.
      const cached =
        prepared.cached ??
        (waitedForCapture && 'valid' in checked
          ? await lookInCache(accountId, checked.valid, input)
          : undefined);
      // A signed link answered from the cache (or by a 304) costs none of its budget.
      if ('signed' in input && cached) {
        await deps.keys
          .touchLastUsed(identity, now())
          .catch((error) => logger.warn('lastUsed not recorded', { error }));
        return { ok: true, screenshot: cached, undelivered: NOTHING_TO_GIVE_BACK };
      }
      // A signed link's budget comes after the cache: a link answered from the cache, or by a 304, costs none of it
      // (docs/api.md 15.3). An invalid link is counted before it is refused, as a POST is: anyone may replay a
      // published link, and its refusals would otherwise be free without bound.
      if (budget === 'signedLink') {
        const spent = await refusedWhenSpent(identity, budget);
        if (spent) return spent;
      }
      const cost = 'valid' in checked && !cached ? creditCost(checked.valid.spec) : undefined;
      const ask: AdmissionAsk = {
        identity,
        budget,
        now: now(),
        slot: cached || queued ? 'none' : cost === undefined ? 'check' : { until: deadline },
        ...(cost === undefined ? {} : { cost }),
        ...(deps.answeredWithinMs === undefined ? {} : { answeredWithinMs: deps.answeredWithinMs }),
      };
      const verdict = await admissions.admit(ask);
      fullWindows.note(ask, verdict);
      rateLimit = verdict.rateLimit;
      if (!verdict.admitted) throw verdict.refusal;
      if (cached) return { ok: true, rateLimit, screenshot: cached, undelivered: NOTHING_TO_GIVE_BACK };
      if (queued)
        return {
          ok: true,
          rateLimit,
          queued: await accept(identity, checked, cost, verdict.creditEpoch),
          undelivered: NOTHING_TO_GIVE_BACK,
        };
      const { leaseId, newcomer } = verdict;
      const release = async (penaltyUntil?: number) => {
        if (leaseId !== undefined) await admissions.release(accountId, leaseId, penaltyUntil);
      };
      const { reservation } = verdict;
      // Its credits are given back or kept once, whichever comes first (the store's conditional writes make sure).
      let settled = false;
      const giveBack = async () => {
        settled = true;
        if (reservation) await giveReservationBack(refundDeps, accountId, reservation);
      };
      const keep = async () => {
        if (settled || !reservation) return;
        settled = true;
        await keepReservedCredits(refundDeps, accountId, reservation);
      };
      let penaltyUntil: number | undefined;
      let released: Promise<void> | undefined;
      const startedAt = now();
      try {
        if ('invalid' in checked) throw checked.invalid;
        const { fields, spec, delivering } = checked.valid;
        let screenshot: Screenshot;
        try {
          // A client that left while its request was validated or looked up is counted, and ends as a hang-up does,
          // its slot kept a while: its lookups' turn was not free (review, session 31: such requests were refused
          // before the window counted them, and held the lookups' places for nothing).
          if (input.signal?.aborted) throw new ClientGoneError();
          const output = await deps.renderer.capture(spec, {
            deadline,
            ...(input.signal ? { signal: input.signal } : {}),
            ...(newcomer === undefined ? {} : { newcomer }),
          });
          // The renderer is done: the slot goes back while the image is stored (an upload to the image store), not
          // after; the answer still waits for it. Its failure is met in `finally`.
          released = release();
          released.catch(() => undefined);
          if (input.signal?.aborted) throw new ClientGoneError();
          const delivered = await delivery.deliver(accountId, delivering, {
            image: output.image,
            contentType: output.contentType,
            etag: `"${createHash('md5').update(output.image).digest('hex')}"`,
            creditsCharged: cost ?? 0,
            truncated: output.truncated,
            ...(output.metadata ? { metadata: output.metadata } : {}),
          });
          screenshot = withCredentialsMark(delivered, fields);
        } catch (error) {
          // A renderer that already answered has stopped; one still capturing may run until the deadline.
          penaltyUntil = slotPenaltyUntil(error, startedAt, now(), released ? now() : deadline);
          await giveBack();
          // The capacity is full for this account: the same 429 as its own bound, with what admission took given back.
          if (error instanceof CapacityFullError) throw new TooManyCapturesError(admissions.slotLimit, now());
          throw error;
        }
        logger.info('screenshot', { accountId, cost, cache: screenshot.cache });
        // An image kept in the account's cache is the customer's whether or not this answer reaches them: the same
        // request answers it again, free. Refunding a hang-up then would give the capture away.
        const undelivered = keptInCache(screenshot)
          ? NOTHING_TO_GIVE_BACK
          : async () => {
              await giveBack();
              await admissions.holdSlot(accountId, now(), asLongAgain(startedAt, now()), budget);
              return true;
            };
        return { ok: true, rateLimit, screenshot, undelivered, settled: keep };
      } finally {
        // A capture that ended free costs its account the slot, for a while longer: its own, or one taken again
        // when it had gone back already, from the same pool as its own (linkSlotLimit).
        if (released === undefined) await release(penaltyUntil);
        else {
          await released;
          if (penaltyUntil !== undefined) await admissions.holdSlot(accountId, now(), penaltyUntil, budget);
        }
      }
    } catch (error) {
      return rateLimit ? { ok: false, error, rateLimit } : { ok: false, error };
    }
  }
}

/** What the metrics count of one answer; `via`, the entry it came through (an MCP tool answers inside a 200). */
function metricOf(
  outcome: ScreenshotOutcome,
  durationMs: number,
  via: ScreenshotInput['via'],
): CaptureOutcome {
  const screenshot = outcome.ok && 'screenshot' in outcome ? outcome.screenshot : undefined;
  return {
    status: outcomeStatus(outcome),
    durationMs,
    creditsCharged: screenshot?.creditsCharged ?? 0,
    cacheHit: screenshot?.cache === 'HIT',
    pageFault: !outcome.ok && outcome.error instanceof CaptureFailedError && outcome.error.fault === 'page',
    ...(via === 'mcp' ? { inToolResult: true } : {}),
  };
}

/** The body thunk, read at most once (validation and the usage record both look at it); its errors are kept too. */
function readOnce(request: () => unknown): () => unknown {
  let read: { value: unknown } | { error: unknown } | undefined;
  return () => {
    if (!read) {
      try {
        read = { value: request() };
      } catch (error) {
        read = { error };
      }
    }
    if ('error' in read) throw read.error;
    return read.value;
  };
}

/** Whether a body that failed validation asked for an async capture: its 400 must not wait for a slot either. */
function asksAsync(request: () => unknown): boolean {
  try {
    const body = request();
    return body !== null && typeof body === 'object' && (body as { async?: unknown }).async === true;
  } catch {
    return false;
  }
}

/** The request's fields and its capture spec, or a ValidationError (400). */
export async function specOf(
  request: () => unknown,
  urlPolicy: UrlPolicy,
): Promise<{ fields: ScreenshotRequest; spec: CaptureSpec }> {
  const fields = validate(screenshotRequest, request());
  // A document given as `html` has no address to check: what it loads is checked as it loads.
  if (fields.url !== undefined) await urlPolicy.assertAllowed(fields.url);
  // A job's webhook is checked at submission too, and again at each delivery (shared/webhooks/).
  if (fields.webhookUrl !== undefined) await assertAllowedAt(urlPolicy, fields.webhookUrl, ['webhookUrl']);
  return { fields, spec: captureSpecOf(fields) };
}

/** A capture made with the caller's `headers` or `cookies` shows what they see: no shared cache may keep it. */
function withCredentialsMark(screenshot: Screenshot, fields: ScreenshotRequest): Screenshot {
  return fields.headers !== undefined || fields.cookies !== undefined
    ? { ...screenshot, credentialed: true }
    : screenshot;
}

/** A request object with `defaults` under what it says itself; anything else is left for validation to refuse. */
function withDefaults(request: unknown, defaults: Record<string, unknown>): unknown {
  return request !== null && typeof request === 'object' && !Array.isArray(request)
    ? { ...defaults, ...request }
    : request;
}
