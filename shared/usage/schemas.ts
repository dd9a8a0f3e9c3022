import { z } from 'zod';

/** The longest window one usage query may cover, in UTC days (both ends included). */
export const MAX_USAGE_DAYS = 92;
/** The window when `from` is not given: this many UTC days, ending with the day of `to`. */
export const DEFAULT_USAGE_DAYS = 30;
/** The last millisecond of the year 9999: every day up to it is a YYYY-MM-DD date. */
const MAX_TIME_MS = 253_402_300_799_999;

/** How `from` and `to` travel in the query string: digits only (no sign, fraction or exponent). */
export const MOMENT_PATTERN = /^\d{1,16}$/;

const moment = (name: string) =>
  z
    .string()
    .regex(MOMENT_PATTERN, `${name} must be a whole number of milliseconds since the epoch`)
    .transform(Number)
    .pipe(z.number().max(MAX_TIME_MS, `${name} must be at most ${MAX_TIME_MS}`));

/** The query parameters of GET /api/usage; the route validates with this and nothing else. */
export const usageQuery = z.strictObject({
  from: moment('from').optional(),
  to: moment('to').optional(),
});

export type UsageQuery = z.infer<typeof usageQuery>;
