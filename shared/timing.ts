/**
 * Time settings shared by the deployed stack (infra/), the local server (local/) and the handlers, so the three
 * cannot drift apart.
 */

/** The screenshot function's timeout; the local server gives every capture the same. */
export const SCREENSHOT_FUNCTION_TIMEOUT_MS = 90_000;

/** The key-management and API-description functions' timeout. */
export const MANAGEMENT_FUNCTION_TIMEOUT_MS = 10_000;

/** Kept back from the function's remaining time to refund and answer after a capture that ran out. */
export const RESPONSE_RESERVE_MS = 3_000;

/** Session tokens (Cognito access tokens deployed, the local identity provider's locally) live this long. */
export const SESSION_TOKEN_LIFETIME_SECONDS = 3_600;

/** A pre-signed link to a stored image (`response: "json"`) is valid this long. */
export const IMAGE_LINK_LIFETIME_SECONDS = 3_600;
