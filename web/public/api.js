// Calls to the API on this page's own origin (the local server, or CloudFront routing /api/* to API Gateway),
// so no CORS is involved and every response header is readable.

export class ApiError extends Error {
  /** @param {number} status @param {string} message */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * The API's own words for an error: `message` (key management) or `error` (screenshot), with what the extra fields
 * add (validation details, credits, rate-limit reset, capture failure reason).
 * @param {number} status
 * @param {any} body
 */
export function describeError(status, body) {
  const base = String(body?.error ?? body?.message ?? `The server answered ${status}`);
  if (Array.isArray(body?.details) && body.details.length > 0) {
    const parts = body.details.map((d) => (d.path?.length ? `${d.path.join('.')}: ${d.message}` : d.message));
    return `${base}: ${parts.join('; ')}`;
  }
  if (status === 402 && typeof body?.required === 'number') {
    return `${base}: this capture costs ${body.required} credits and the balance is ${body.available}.`;
  }
  if (status === 429 && typeof body?.reset === 'number') {
    return `${base}: at most ${body.limit} captures an hour; try again after ${new Date(body.reset).toLocaleTimeString()}.`;
  }
  if (body?.error && typeof body?.message === 'string') return `${base}: ${body.message}`;
  return base;
}

async function failure(response) {
  const body = await response.json().catch(() => null);
  return new ApiError(response.status, describeError(response.status, body));
}

/**
 * A JSON call with the session token.
 * @param {string} path @param {{ method?: string, token: string, body?: unknown }} options
 */
export async function callApi(path, { method = 'GET', token, body }) {
  const response = await fetch(path, {
    method,
    cache: 'no-store',
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * POST /api/screenshot with an API key: the image as a Blob and what the headers say about it.
 * @param {string} apiKey @param {Record<string, unknown>} request
 */
export async function capture(apiKey, request) {
  const response = await fetch('/api/screenshot', {
    method: 'POST',
    cache: 'no-store',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(request),
  });
  if (!response.ok) throw await failure(response);
  const image = await response.blob();
  const header = (name) => response.headers.get(name);
  return {
    image,
    credits: Number(header('X-Credits-Charged')),
    truncated: header('X-Screenshot-Truncated') === 'true',
    remaining: header('X-RateLimit-Remaining'),
    limit: header('X-RateLimit-Limit'),
  };
}
