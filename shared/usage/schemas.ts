import { z } from 'zod';

/** The longest window one usage query may cover, in UTC days (both ends included). */
export const MAX_USAGE_DAYS = 92;
/** The window when `from` is not given: this many UTC days, ending with the day of `to`. */
export const DEFAULT_USAGE_DAYS = 30;
/** The latest moment a Date can hold; larger numbers name no day. */
const MAX_TIME_MS = 8_640_000_000_000_000;

const moment = (name: string) =>
  z
    .string()
    .regex(/^\d{1,16}$/, `${name} must be a whole number of milliseconds since the epoch`)
    .transform(Number)
    .pipe(z.number().max(MAX_TIME_MS, `${name} must be at most ${MAX_TIME_MS}`));

/** The query parameters of GET /api/usage; the route validates with this and nothing else. */
export const usageQuery = z.strictObject({
  from: moment('from').optional(),
  to: moment('to').optional(),
});

export type UsageQuery = z.infer<typeof usageQuery>;
