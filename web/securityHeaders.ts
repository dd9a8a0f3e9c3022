/**
 * The dashboard's security headers, defined once for the local server (local/dashboardRoutes.ts) and the CloudFront
 * response headers policy (infra/dashboardSite.ts), so the page is tested under the policy it is deployed with.
 */

/**
 * Only the page's own files may run or style anything: no inline scripts or styles, no eval, and Trusted Types with
 * no policy, so no HTML string can ever become markup. `connectSources` adds origins fetch() may reach (the Cognito
 * token endpoint, deployed); `blob:` images are the captures shown on the page, `imageSources` the origins of other
 * images it shows (the signed-link CDN, deployed, for a signed link's preview).
 */
export function dashboardContentSecurityPolicy(
  connectSources: readonly string[] = [],
  imageSources: readonly string[] = [],
): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    ["img-src 'self' blob:", ...imageSources].join(' '),
    ["connect-src 'self'", ...connectSources].join(' '),
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join('; ');
}

/** Headers beside the CSP, as the local server sends them (CloudFront expresses the same through its policy). */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};
