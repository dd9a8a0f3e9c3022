/**
 * Each `set` of a balance starts a new epoch of it (0 before the first). A refund names the epoch its credits were
 * reserved in and lands in that one only: an operator who sets an account's balance (to 0, to cut it off) does not
 * have it filled again by the failures of what was in flight, captures or queued jobs (red team). A refund that names
 * none (an operator returning a pending refund) always lands.
 */
export type CreditEpoch = number;
