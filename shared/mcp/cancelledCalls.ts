/**
 * Port: the tool calls an agent cancelled. Over Streamable HTTP a cancellation (`notifications/cancelled`) comes in a
 * request of its own while the call's request runs on, deployed on another instance: it is kept where any instance
 * reads it, and a call that finds its own before it answers gives its credits back instead (docs/api.md, "MCP").
 */
export interface CancelledCalls {
  /** Keeps the cancellation, at `now`, of the account's call `requestId` (the JSON-RPC id) for a while. */
  mark(accountId: string, requestId: string, now: number): Promise<void>;
  /**
   * Whether a call of that id that started at `startedAt` was cancelled: by a cancellation that came while it ran.
   * JSON-RPC ids are the client's, and every client numbers its calls from the same start (the stdio bridge sends
   * every call as id 1): an earlier call's cancellation, or one sent ahead of a call, must not touch it (red team).
   */
  cancelledSince(accountId: string, requestId: string, startedAt: number, now: number): Promise<boolean>;
}

/** How long a cancellation is kept: longer than any call runs (its capture budget and the delivery). */
export const CANCELLATION_KEPT_MS = 10 * 60_000;

/**
 * Whether a cancellation that came at `at` (undefined: none) takes a call that started at `startedAt`: one that came
 * while it ran, and is still kept at `now`.
 */
export function takesCall(at: number | undefined, startedAt: number, now: number): boolean {
  return at !== undefined && at >= startedAt && at > now - CANCELLATION_KEPT_MS;
}
