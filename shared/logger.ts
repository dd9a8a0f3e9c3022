import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';

/**
 * An absolute URL inside a string: a scheme, `//`, and everything up to a character no URL the parser hands back
 * holds in clear (white space, double quotes, angle brackets). A single quote may be part of one, so it is kept. No
 * word boundary before the scheme: `id_http://…` hid one from it (red team, round 23).
 */
const URL_IN_TEXT = /[a-z][a-z0-9+.-]*:\/\/[^\s"<>]+/gi;

/** A `data:` URL: an `html` capture's address is its whole document in base64 (red team, round 23). */
const DATA_URL_IN_TEXT = /data:[^\s"'<>]*/gi;

/**
 * `text` with every absolute URL cut down to its scheme and host, as usage records keep it: capture URLs carry the
 * customer's secrets in `user:password@`, paths and query tokens, and page errors and browser messages quote them.
 */
export function hostsOnly(text: string): string {
  return text.replace(DATA_URL_IN_TEXT, 'data:[…]').replace(URL_IN_TEXT, (found) => {
    try {
      const url = new URL(found);
      return url.host === '' ? `${url.protocol}[url]` : `${url.protocol}//${url.host}`;
    } catch {
      return '[url]';
    }
  });
}

/** The names of the standard errors, the only part of a page's error a log line keeps (errorKind). */
const ERROR_KINDS = new Set([
  'Error',
  'EvalError',
  'RangeError',
  'ReferenceError',
  'SyntaxError',
  'TypeError',
  'URIError',
  'AggregateError',
  'DOMException',
]);

/**
 * What a log line may say of an error whose text a page wrote: its kind, from a fixed list. The message is the
 * page's own and may quote anything it holds (its URL's path and query, the customer's cookies, an `html` document:
 * red team, round 23).
 */
export function errorKind(error: unknown): string {
  const name = error instanceof Error ? (/^(\w+):/.exec(error.message)?.[1] ?? error.name) : '';
  return ERROR_KINDS.has(name) ? name : 'Error';
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
const processLogger = new Logger({
  serviceName: 'screenshot-service',
  jsonReplacerFn: (_key, value) => (typeof value === 'string' ? hostsOnly(value) : value),
});

/** The logger of the request running in this async context, with its keys (withLogKeys). */
const requestLoggers = new AsyncLocalStorage<Logger>();

/**
 * The logger of whatever runs: the request's (withLogKeys) inside one, else the process's. Lines are written by the
 * logger that is current when they are logged, so a request's keys never reach another's lines.
 */
export const logger = new Proxy(processLogger, {
  get(process, name) {
    const active = requestLoggers.getStore() ?? process;
    const value = Reflect.get(active, name, active);
    return typeof value === 'function' ? value.bind(active) : value;
  },
});

/**
 * Runs `work` with every line it logs (and whatever it starts logs) carrying `keys`, such as the request's id. Keys
 * appended to the one logger of the process named another request's lines wherever requests overlap (the local
 * server runs them all in one process), and lines logged after they were reset carried none (red team, round 21).
 */
export function withLogKeys<T>(keys: Record<string, string>, work: () => Promise<T>): Promise<T> {
  return requestLoggers.run(processLogger.createChild({ persistentKeys: keys }), work);
}
