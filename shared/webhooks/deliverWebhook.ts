import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { effectivePort } from '../egress/allowList';
import type { EgressGate } from '../egress/egressGate';
import { logger } from '../logger';

/** One event for one receiver. `id` is the same on every attempt of the event; `timestamp` is the event's, in ms. */
export interface WebhookMessage {
  url: string;
  id: string;
  type: string;
  timestamp: number;
  data: unknown;
}

export interface WebhookDeliveryResult {
  /** A 2xx answer arrived within the time allowed. */
  delivered: boolean;
  /** The receiver's status code, or null when none arrived. */
  status: number | null;
  /** Why it was not delivered, without the URL (a host or address at most). */
  error?: string;
}

export interface WebhookDeliveryDeps {
  /** The egress rules of a page (ALLOW_PRIVATE_HOSTS, our own ports), applied to the address connected to. */
  egress: EgressGate;
  /** The whole attempt, DNS included, until the status line: 10 s (docs/api.md). */
  timeoutMs?: number;
  now?: () => number;
}

export const WEBHOOK_TIMEOUT_MS = 10_000;
/** A receiver's answer body is read this far, then the connection is dropped: only the status matters. */
const MAX_RESPONSE_BYTES = 4 * 1024;

/**
 * One delivery attempt of `message`, signed by the Standard Webhooks scheme with every secret in `secrets` (more
 * than one during a rotation overlap). The host is resolved once, every address checked by the egress rules, and
 * the connection made to the first checked address itself, so a rebinding DNS cannot move it elsewhere. Redirects
 * are not followed. Never throws: a failure is a result, for the caller's retry schedule.
 */
export async function deliverWebhook(
  message: WebhookMessage,
  secrets: readonly string[],
  deps: WebhookDeliveryDeps,
): Promise<WebhookDeliveryResult> {
  const now = deps.now ?? Date.now;
  const timeout = AbortSignal.timeout(deps.timeoutMs ?? WEBHOOK_TIMEOUT_MS);
  let url: URL;
  try {
    url = new URL(message.url);
  } catch {
    return notDelivered('webhook url is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return notDelivered('webhook url must be http or https');
  }
  if (secrets.length === 0) return notDelivered('no webhook secret to sign with');
  const host = url.hostname;
  const port = effectivePort(url);

  const verdict = await untilAborted(deps.egress.check(host, port), timeout);
  if (verdict === undefined) return logged(url.host, notDelivered('timed out resolving the host'));
  if (verdict.kind !== 'allowed') return logged(url.host, notDelivered(verdict.reason));
  const [address] = verdict.addresses;
  if (address === undefined) return logged(url.host, notDelivered(`could not resolve ${host}`));

  const body = JSON.stringify({ type: message.type, timestamp: message.timestamp, data: message.data });
  const sentAt = new Date(now());
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'screenshot-service-webhooks/1',
    host: url.host,
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': secrets
      .map((secret) => new Webhook(secret).sign(message.id, sentAt, body))
      .join(' '),
  };
  const bareHost = host.startsWith('[') ? host.slice(1, -1) : host;
  const options: RequestOptions & { servername?: string } = {
    // The checked address itself: nothing is resolved again.
    host: address,
    port,
    method: 'POST',
    path: `${url.pathname}${url.search}`,
    headers,
    setHost: false,
    agent: false,
    signal: timeout,
  };
  // TLS names and verifies the host the customer gave, whatever address it was reached at.
  if (url.protocol === 'https:' && isIP(bareHost) === 0) options.servername = bareHost;
  const result = await post(url.protocol === 'https:' ? httpsRequest : httpRequest, options, body);
  return logged(url.host, result);
}

function post(
  send: typeof httpRequest,
  options: RequestOptions,
  body: string,
): Promise<WebhookDeliveryResult> {
  return new Promise((resolve) => {
    const req = send(options, (res: IncomingMessage) => {
      const status = res.statusCode ?? null;
      const delivered = status !== null && status >= 200 && status < 300;
      resolve(
        delivered ? { delivered, status } : { delivered, status, error: `receiver answered ${status}` },
      );
      discardBounded(res);
    });
    req.on('error', (error) => {
      const timedOut = options.signal?.aborted === true;
      resolve(
        notDelivered(timedOut ? 'receiver did not answer in time' : `request failed (${codeOf(error)})`),
      );
    });
    req.end(body);
  });
}

/** Reads a little of the answer so a small one completes cleanly, then hangs up on anything larger or slower. */
function discardBounded(res: IncomingMessage): void {
  let read = 0;
  res.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > MAX_RESPONSE_BYTES) res.destroy();
  });
  res.on('error', () => {});
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function notDelivered(error: string): WebhookDeliveryResult {
  return { delivered: false, status: null, error };
}

/** The host only: the rest of a webhook URL may carry the customer's tokens. */
function logged(host: string, result: WebhookDeliveryResult): WebhookDeliveryResult {
  if (result.delivered) logger.info('Webhook delivered', { host, status: result.status });
  else logger.warn('Webhook not delivered', { host, status: result.status, reason: result.error });
  return result;
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'network error';
}
