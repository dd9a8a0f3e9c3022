/**
 * A `headers` object of `proxy-*` names with empty values, about `bytes` long as JSON: each one refused, the most
 * refusals a body of that size holds (the red team's amplifier of 400 details).
 */
export function proxyHeaders(bytes: number): Record<string, string> {
  const headers: Record<string, string> = {};
  let size = 0;
  for (let n = 0; size < bytes; n++) {
    const name = `proxy-${n.toString(36)}`;
    headers[name] = '';
    size += name.length + 6;
  }
  return headers;
}
