import { Duration } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import type { Construct } from 'constructs';

/** What every answer of our distributions carries, whatever its origin said: HTTPS only, no sniffing, no referrer. */
export const COMMON_SECURITY_HEADERS = {
  contentTypeOptions: { override: true },
  referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
  strictTransportSecurity: {
    accessControlMaxAge: Duration.days(365),
    includeSubdomains: true,
    override: true,
  },
} satisfies cloudfront.ResponseSecurityHeadersBehavior;

export interface ApiResponseHeadersProps {
  comment: string;
  /** X-Frame-Options for every answer; without it, the answers may be framed (signed links are made to be embedded). */
  frameOption?: cloudfront.HeadersFrameOption;
}

/**
 * The security headers of the API's answers behind CloudFront. Deliberately no Content-Security-Policy: the API
 * chooses its own per answer (`sandbox` for a captured document, none for an image: shared/http/screenshotRoute.ts),
 * and a policy that set one with override would replace that sandbox, so a captured page would run script on the
 * distribution's origin (the dashboard's, for `/api/*` there).
 */
export function apiResponseHeadersPolicy(
  scope: Construct,
  id: string,
  props: ApiResponseHeadersProps,
): cloudfront.ResponseHeadersPolicy {
  return new cloudfront.ResponseHeadersPolicy(scope, id, {
    comment: props.comment,
    securityHeadersBehavior: {
      ...COMMON_SECURITY_HEADERS,
      ...(props.frameOption === undefined
        ? {}
        : { frameOptions: { frameOption: props.frameOption, override: true } }),
    },
  });
}
