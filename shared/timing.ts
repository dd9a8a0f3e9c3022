/**
 * Time settings shared by the deployed stack (infra/), the local server (local/) and the handlers, so the three
 * cannot drift apart.
 */

/** The screenshot function's timeout; the local server gives every capture the same. */
export const SCREENSHOT_FUNCTION_TIMEOUT_MS = 90_000;

/**
 * The job worker's timeout: one capture as the screenshot front allows it (its longest budget), the store writes,
 * and a webhook attempt's 10 s. A claim on a failed job's refund lasts as long (REFUND_CLAIM_MS, jobStore.ts).
 */
export const JOB_WORKER_TIMEOUT_MS = 120_000;

/** The key-management and API-description functions' timeout. */
export const MANAGEMENT_FUNCTION_TIMEOUT_MS = 10_000;

/** Kept back from the function's remaining time to refund and answer after a capture that ran out. */
export const RESPONSE_RESERVE_MS = 3_000;

/**
 * Past a capture's deadline, how long the front still waits for the renderer's answer (a failure it reports at its
 * deadline, or an image finished just before it). Taken out of RESPONSE_RESERVE_MS, never added to it: a renderer
 * that does not answer (hung, or taken over) must not keep the front until Lambda stops it, which would leave its
 * credits charged and its client without an answer. What remains of the reserve refunds and answers.
 */
export const ANSWER_GRACE_MS = RESPONSE_RESERVE_MS - 1_000;

/** Session tokens (Cognito access tokens deployed, the local identity provider's locally) live this long. */
export const SESSION_TOKEN_LIFETIME_SECONDS = 3_600;

/**
 * The time budget of one capture, counted from the moment the request is admitted to run (docs/api.md, "Time
 * budget"): the page has this long to load (the load event)...
 */
export const NAVIGATION_BUDGET_MS = 30_000;

/** ...then this long for what follows it: `delay`, waiting for the page to settle, and taking the image. */
export const AFTER_LOAD_BUDGET_MS = 30_000;

/** The longest `delay` a request may ask for: the caller's own wait, added to the time after load. */
export const MAX_DELAY_MS = 30_000;

/**
 * The whole budget, the longest delay included; the screenshot function's timeout (less the response reserve) caps
 * it in the rare capture that uses every part to the full.
 */
export const CAPTURE_BUDGET_MS = NAVIGATION_BUDGET_MS + AFTER_LOAD_BUDGET_MS + MAX_DELAY_MS;

/** The two parts of a capture's budget; tests shorten them, deployments never do. */
export interface CaptureBudgets {
  navigationMs: number;
  afterLoadMs: number;
}

export const CAPTURE_BUDGETS: Readonly<CaptureBudgets> = {
  navigationMs: NAVIGATION_BUDGET_MS,
  afterLoadMs: AFTER_LOAD_BUDGET_MS,
};

/**
 * How long a capture that ran out of its time budget keeps one of its account's slots after it ended (docs/api.md,
 * "Fair sharing of capture capacity"): an account whose captures keep running out gets fewer slots for a while.
 */
export const TIMED_OUT_SLOT_PENALTY_MS = 120_000;

/** How long closing a stopped page's context may take before the whole browser is replaced instead. */
export const PAGE_KILL_GRACE_MS = 3_000;

/** A pre-signed link to a stored image (`response: "json"`) is valid this long. */
export const IMAGE_LINK_LIFETIME_SECONDS = 3_600;
