/**
 * The service's MCP address under `base`, SCREENSHOT_API_URL as docs/api.md gives it: its path kept, so a deployed
 * base with its stage (`…/prod`) gives `…/prod/mcp` (`new URL('/mcp', base)` would drop the stage).
 */
export function mcpEndpoint(base: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/mcp`;
  url.search = '';
  url.hash = '';
  return url;
}
