import { z } from 'zod';

/**
 * Why `npm start` could not start, in words for whoever typed it: a setting the service refuses names its variable
 * and what it takes (zod's own summary), any other failure its message. No stack: a stack for a typo in the
 * environment hid the variable's name in a JSON dump (red team, round 31).
 */
export function startupFailure(error: unknown): string {
  if (error instanceof z.ZodError) return `a setting is not valid:\n${z.prettifyError(error)}`;
  return error instanceof Error ? error.message : String(error);
}
