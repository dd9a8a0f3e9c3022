/**
 * The signed-link CDN's viewer-request function (CloudFront Functions, JavaScript runtime 2.0): it rewrites a link's
 * query into the one form docs/api.md 15.3 prescribes (the canonical query, `&signature=` with the hex in lower
 * case) before the cache looks it up. The API accepts a link whatever the order of its parameters, the case of its
 * percent-escapes or of its signature, and escapes of characters that need none; each such spelling was a cache key
 * of its own with the same valid signature, so anyone holding one link could send its hits to the API at will, each
 * free and holding a screenshot function while a large image streamed (red team, round 13).
 *
 * Empty segments (`&&`, a leading or trailing `&`) are dropped, as the API drops them: kept, they made a raw query of
 * any link, and so every spelling of it a key again (red team, round 20). A query the function cannot read as the API
 * would is left as it is (and the API answers it): one with `+` (read as a space by some and as a plus by others; the
 * documented form never has one), a repeated or empty name, a segment without `=`, or an escape that is not UTF-8
 * (or a `%` that starts none: only a link whose values hold `%` or U+FFFD can be spelt that way). Kept as source
 * text, since it runs at the edge and not in Node: the test runs this very text against the API's own canonicalQuery
 * (test/infra/canonicalLinkQuery.test.ts).
 */
export const CANONICAL_LINK_QUERY_SOURCE = `
function encodeRfc3986(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, function (char) {
    return '%' + char.charCodeAt(0).toString(16).toUpperCase();
  });
}

function canonicalLinkQuery(raw) {
  if (raw.indexOf('+') !== -1) return undefined;
  var pairs = [];
  var signature;
  var segments = raw.split('&');
  for (var i = 0; i < segments.length; i++) {
    if (segments[i] === '') continue;
    var at = segments[i].indexOf('=');
    if (at < 1) return undefined;
    var name;
    var value;
    try {
      name = decodeURIComponent(segments[i].slice(0, at));
      value = decodeURIComponent(segments[i].slice(at + 1));
    } catch (e) {
      return undefined;
    }
    if (name === 'signature') {
      if (signature !== undefined) return undefined;
      signature = value.toLowerCase();
    } else {
      pairs.push([encodeRfc3986(name), encodeRfc3986(value)]);
    }
  }
  pairs.sort(function (a, b) {
    return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
  });
  var parts = [];
  for (var j = 0; j < pairs.length; j++) {
    if (j > 0 && pairs[j][0] === pairs[j - 1][0]) return undefined;
    parts.push(pairs[j][0] + '=' + pairs[j][1]);
  }
  if (signature !== undefined) parts.push('signature=' + encodeRfc3986(signature));
  return parts.length > 0 ? parts.join('&') : undefined;
}

function handler(event) {
  var request = event.request;
  var raw = request.rawQueryString();
  var canonical = raw ? canonicalLinkQuery(raw) : undefined;
  if (canonical !== undefined) request.querystring = canonical;
  return request;
}
`;
