import { ValidationError } from '../errors';
import { effectivePort } from './allowList';
import { createEgressGate, type HostLookup } from './egressGate';

/** Decides, before any credits are reserved, whether the requested page may be captured at all. */
export interface UrlPolicy {
  /** Throws ValidationError (`url_not_allowed`) for a URL whose host is, or resolves to, a non-public address. */
  assertAllowed(url: string): Promise<void>;
}

export interface UrlPolicyOptions {
  /** Raw ALLOW_PRIVATE_HOSTS. */
  allowPrivateHosts: string;
  lookup?: HostLookup;
  /**
   * The local server only: a refusal that ALLOW_PRIVATE_HOSTS could lift says how. Never deployed, and never for the
   * service's own ports, which no setting opens.
   */
  mentionAllowPrivateHosts?: boolean;
}

export function createUrlPolicy(options: UrlPolicyOptions): UrlPolicy {
  const gate = createEgressGate(options);
  return {
    async assertAllowed(raw) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw notAllowed('url must be a valid http:// or https:// URL');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw notAllowed('url must be a valid http:// or https:// URL');
      }
      const verdict = await gate.check(url.hostname, effectivePort(url));
      // A name that does not resolve is not refused here: the capture fails on it (500, docs/api.md), and the
      // egress proxy checks again, against the addresses it actually connects to.
      if (verdict.kind === 'refused') {
        const hostPort = `${url.hostname}:${effectivePort(url)}`;
        throw notAllowed(
          options.mentionAllowPrivateHosts && verdict.allowable
            ? `${verdict.reason}. To capture it with the local server, start it with ALLOW_PRIVATE_HOSTS=${hostPort} (or '*' for every private address)`
            : verdict.reason,
        );
      }
    },
  };
}

/**
 * The policy's verdict on a URL held by another field than `url` (a `webhookUrl`, a batch's `requests[3].url`): the
 * same rules, the refusal naming that field.
 */
export async function assertAllowedAt(
  policy: UrlPolicy,
  url: string,
  path: (string | number)[],
): Promise<void> {
  try {
    await policy.assertAllowed(url);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(
      error.details.map((detail) => ({
        ...detail,
        path,
        message: detail.message.replace(/^url\b/, String(path.at(-1))),
      })),
      error.message,
    );
  }
}

function notAllowed(message: string): ValidationError {
  return new ValidationError([{ code: 'url_not_allowed', path: ['url'], message }]);
}
