import type * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { MAX_HTML_BODY_BYTES } from '../shared/http/screenshotRoute';

/**
 * The largest valid request body: a screenshot body holding an `html` document (1 MiB + 96 KiB, docs/api.md
 * "Limits"); the handler refuses the others above their own 96 KiB.
 */
export const MAX_BODY_BYTES = MAX_HTML_BODY_BYTES;

/**
 * A pattern matching exactly the decimal numbers above `limit`, leading zeros allowed: longer numbers, then for each
 * digit of the limit, numbers that share the digits before it and have a larger one there.
 */
export function decimalAbove(limit: number): string {
  const digits = String(limit);
  const sameLength = [...digits].flatMap((digit, i) => {
    if (digit === '9') return [];
    const rest = digits.length - i - 1;
    const larger = digit === '8' ? '9' : `[${Number(digit) + 1}-9]`;
    return [`${digits.slice(0, i)}${larger}${rest === 0 ? '' : rest === 1 ? '[0-9]' : `[0-9]{${rest}}`}`];
  });
  return `^0*(?:${[...sameLength.reverse(), `[1-9][0-9]{${digits.length},}`].join('|')})$`;
}

/**
 * A declared Content-Length above MAX_BODY_BYTES. WAF sees at most the first 64 KB of a body, so a body-size
 * statement cannot tell 70 KB (valid) from 2 MB: the declared length can. A body sent without a length is still
 * capped by API Gateway (10 MB) and refused by the handler with 413.
 */
export const CONTENT_LENGTH_ABOVE_MAX = decimalAbove(MAX_BODY_BYTES);

/**
 * Rules of the managed common rule set that read the request body. Our bodies legitimately carry what they look for
 * (URLs with IP addresses, scripts and style sheets of up to 32 KiB, bodies above 8 KB), and the handler validates
 * every field itself, so these only count. The set's header, path and query rules keep blocking.
 */
export const COMMON_RULES_COUNTED = [
  'SizeRestrictions_BODY',
  'CrossSiteScripting_BODY',
  'GenericLFI_BODY',
  'GenericRFI_BODY',
  'EC2MetaDataSSRF_BODY',
] as const;

export interface ServiceWebAclProps {
  /** REGIONAL for the API stage; CLOUDFRONT (in us-east-1) for the dashboard's distribution. */
  scope: 'REGIONAL' | 'CLOUDFRONT';
  /** Requests per 5 minutes from one IP address before WAF answers 429. */
  requestsPerIp: number;
  /** Requests per 5 minutes carrying one Authorization value (an API key or a session token). */
  requestsPerCredential: number;
  /** The ACL's name (unique per stack) and the prefix of its rules' CloudWatch metric names. */
  name: string;
}

const JSON_BODIES = {
  tooManyRequests: '{"message":"Too Many Requests"}',
  bodyTooLarge: `{"message":"Request body larger than ${MAX_BODY_BYTES} bytes"}`,
};

/**
 * The web ACL in front of the service: abusive traffic is refused before any function starts (and before a 3 GB
 * screenshot function is paid for). Refusals keep the API's `{ "message" }` shape.
 */
export class ServiceWebAcl extends Construct {
  readonly acl: CfnWebACL;

  constructor(scope: Construct, id: string, props: ServiceWebAclProps) {
    super(scope, id);
    const visibility = (name: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      metricName: `${props.name}-${name}`,
      cloudWatchMetricsEnabled: true,
      sampledRequestsEnabled: true,
    });
    const refuse = (responseCode: number, body: keyof typeof JSON_BODIES, retryAfter?: string) => ({
      block: {
        customResponse: {
          responseCode,
          customResponseBodyKey: body,
          ...(retryAfter ? { responseHeaders: [{ name: 'Retry-After', value: retryAfter }] } : {}),
        },
      },
    });
    const managed = (name: string, priority: number, excluded: readonly string[] = []) => ({
      name,
      priority,
      overrideAction: { none: {} },
      statement: {
        managedRuleGroupStatement: {
          vendorName: 'AWS',
          name,
          ...(excluded.length > 0
            ? { ruleActionOverrides: excluded.map((rule) => ({ name: rule, actionToUse: { count: {} } })) }
            : {}),
        },
      },
      visibilityConfig: visibility(name),
    });

    this.acl = new CfnWebACL(this, 'WebAcl', {
      name: props.name,
      scope: props.scope,
      defaultAction: { allow: {} },
      visibilityConfig: visibility('all'),
      customResponseBodies: Object.fromEntries(
        Object.entries(JSON_BODIES).map(([key, content]) => [
          key,
          { contentType: 'APPLICATION_JSON', content },
        ]),
      ),
      rules: [
        {
          name: 'BodyTooLarge',
          priority: 0,
          action: refuse(413, 'bodyTooLarge'),
          statement: {
            regexMatchStatement: {
              fieldToMatch: { singleHeader: { Name: 'content-length' } },
              regexString: CONTENT_LENGTH_ABOVE_MAX,
              textTransformations: [{ priority: 0, type: 'NONE' }],
            },
          },
          visibilityConfig: visibility('BodyTooLarge'),
        },
        managed('AWSManagedRulesAmazonIpReputationList', 1),
        {
          name: 'RateLimitPerIp',
          priority: 2,
          action: refuse(429, 'tooManyRequests', '60'),
          statement: {
            rateBasedStatement: {
              limit: props.requestsPerIp,
              evaluationWindowSec: 300,
              aggregateKeyType: 'IP',
            },
          },
          visibilityConfig: visibility('RateLimitPerIp'),
        },
        {
          // Requests without the header are not counted here (WAF skips a missing key); the IP rule covers them.
          name: 'RateLimitPerCredential',
          priority: 3,
          action: refuse(429, 'tooManyRequests', '60'),
          statement: {
            rateBasedStatement: {
              limit: props.requestsPerCredential,
              evaluationWindowSec: 300,
              aggregateKeyType: 'CUSTOM_KEYS',
              customKeys: [
                { header: { name: 'authorization', textTransformations: [{ priority: 0, type: 'NONE' }] } },
              ],
            },
          },
          visibilityConfig: visibility('RateLimitPerCredential'),
        },
        managed('AWSManagedRulesCommonRuleSet', 4, COMMON_RULES_COUNTED),
      ],
    });
  }
}
