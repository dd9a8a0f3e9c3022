// Signed links for <img> tags (docs/api.md, section 15.3), built in the page: the signing secret never leaves it.

/** RFC 3986 percent-encoding of UTF-8: only A–Z a–z 0–9 - . _ ~ stay as they are. @param {string} text */
const encode = (text) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Where signed links point: deployed, the signed-link CDN that config.json names (its edge answers repeated loads
 * without reaching the API); locally, and whenever config.json names none, the page's own origin, which serves the API.
 * @param {{ signedLinkBaseUrl?: unknown } | undefined} config @param {string} pageOrigin
 */
export function signedLinkBase(config, pageOrigin) {
  const base = config?.signedLinkBaseUrl;
  return typeof base === 'string' && base.startsWith('https://') ? base.replace(/\/+$/, '') : pageOrigin;
}

/**
 * `GET <base>/api/screenshot?<options>&keyId=…&signature=…`: every option as text (arrays and objects as JSON), keyId
 * added, the parameters sorted by encoded name and signed with HMAC-SHA256 (WebCrypto).
 * @param {string} base @param {string} keyId @param {string} signingSecret @param {Record<string, unknown>} options
 */
export async function signedLink(base, keyId, signingSecret, options) {
  const params = { ...options, keyId };
  const canonical = Object.entries(params)
    .map(([name, value]) => [encode(name), encode(typeof value === 'string' ? value : JSON.stringify(value))])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const text = new TextEncoder();
  const key = await crypto.subtle.importKey(
    'raw',
    text.encode(signingSecret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, text.encode(canonical)));
  const signature = Array.from(mac, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${base}/api/screenshot?${canonical}&signature=${signature}`;
}
