/**
 * Port: the tool calls an agent cancelled. Over Streamable HTTP a cancellation (`notifications/cancelled`) comes in a
 * request of its own while the call's request runs on, deployed on another instance: it is kept where any instance
 * reads it, and a call that finds one that came while it ran gives its credits back instead (docs/api.md, "MCP").
 */
export interface CancelledCalls {
  /** Keeps a cancellation of the account's call `requestId` (the JSON-RPC id), a new mark each time, for a while. */
  mark(accountId: string, requestId: string, now: number): Promise<void>;
  /** The latest mark kept for the account's call id; undefined when none is. */
  latest(accountId: string, requestId: string): Promise<CancellationMark>;
}

/** One cancellation, told apart from every other by its own value. */
export type CancellationMark = string | undefined;

/** How long a cancellation is kept: longer than any call runs (its capture budget and the delivery). */
export const CANCELLATION_KEPT_MS = 10 * 60_000;

/**
 * Whether a cancellation came while a call ran: the mark read at its end is one it did not find at its start. JSON-RPC
 * ids are the client's, and every client numbers its calls from the same start (the stdio bridge sends every call as
 * id 1): an earlier call's cancellation, or one sent ahead of a call, must not touch it (red team). Marks, not times,
 * are compared: deployed, the cancellation and the call are read on different instances, whose clocks may differ.
 */
export function cameWhileRunning(atStart: CancellationMark, atEnd: CancellationMark): boolean {
  return atEnd !== undefined && atEnd !== atStart;
}
