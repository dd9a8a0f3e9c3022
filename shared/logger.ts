import { Logger } from '@aws-lambda-powertools/logger';

/**
 * An absolute URL inside a string: a scheme, `//`, and everything up to a character no URL the parser hands back
 * holds in clear (white space, double quotes, angle brackets). A single quote may be part of one, so it is kept.
 */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"<>]+/gi;

/**
 * `text` with every absolute URL cut down to its scheme and host, as usage records keep it: capture URLs carry the
 * customer's secrets in `user:password@`, paths and query tokens, and page errors and browser messages quote them.
 */
export function hostsOnly(text: string): string {
  return text.replace(URL_IN_TEXT, (found) => {
    try {
      const url = new URL(found);
      return url.host === '' ? `${url.protocol}[url]` : `${url.protocol}//${url.host}`;
    } catch {
      return '[url]';
    }
  });
}

/** The host of a URL the caller gave (`url`), for log lines; never the rest of it. */
export function hostOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).host || undefined : undefined;
}

/**
 * The one structured logger. Never pass it a key, a token or an Authorization header: log ids and hashes' prefixes.
 * Every string it writes, at any depth (error messages and stacks included), goes through `hostsOnly`, so no URL
 * reaches the logs whole, whoever logged it. Level comes from POWERTOOLS_LOG_LEVEL (tests set SILENT). Powertools
 * keeps `message` for the log line's own text: a detail's text goes under another key.
 */
export const logger = new Logger({
  serviceName: 'screenshot-service',
  jsonReplacerFn: (_key, value) => (typeof value === 'string' ? hostsOnly(value) : value),
});
