import { RemovalPolicy } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { CfnLoggingConfiguration, CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { MAX_HTML_BODY_BYTES } from '../shared/screenshot/bodySize';
import { ORIGIN_VERIFY_HEADER } from './dashboardSite';

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
 * every field itself, so these only count. The set's header and path rules keep blocking, and its query rules block
 * everywhere but on the signed-link route (COMMON_QUERY_RULES).
 */
export const COMMON_RULES_COUNTED = [
  'SizeRestrictions_BODY',
  'CrossSiteScripting_BODY',
  'GenericLFI_BODY',
  'GenericRFI_BODY',
  'EC2MetaDataSSRF_BODY',
] as const;

/**
 * Rules of the managed common rule set that read the query string. A signed link is a whole screenshot request in
 * its query: long (over 2 KB), with `url=http://<ip>` and options that look like scripts. On that route the handler
 * validates every parameter itself (and refuses private addresses), so there these rules only count; on every other
 * route their labels still block (rule CommonQueryRulesOutsideSignedLinks).
 */
export const COMMON_QUERY_RULES = {
  SizeRestrictions_QUERYSTRING: 'SizeRestrictions_QueryString',
  CrossSiteScripting_QUERYARGUMENTS: 'CrossSiteScripting_QueryArguments',
  GenericLFI_QUERYARGUMENTS: 'GenericLFI_QueryArguments',
  GenericRFI_QUERYARGUMENTS: 'GenericRFI_QueryArguments',
  EC2MetaDataSSRF_QUERYARGUMENTS: 'EC2MetaDataSSRF_QueryArguments',
} as const;
const COMMON_RULE_SET_LABELS = 'awswaf:managed:aws:core-rule-set:';

/**
 * An Authorization header carrying a well-formed API key, once WAF has lowercased it and compressed its white space
 * (shared/keys/apiKey.ts: `sk_live_` and 40 hex characters). Requests to the API-key routes without it never
 * start a function.
 */
export const WELL_FORMED_API_KEY_HEADER = '^bearer sk_live_[0-9a-f]{40}$';

/**
 * How a credential is normalized before WAF counts it: `Bearer  SK_live_...` and `bearer sk_live_...` are one key,
 * so changing case or spacing does not open a new window. The handler accepts the same variants.
 */
export const CREDENTIAL_TRANSFORMATIONS: wafv2.CfnWebACL.TextTransformationProperty[] = [
  { priority: 0, type: 'LOWERCASE' },
  { priority: 1, type: 'COMPRESS_WHITE_SPACE' },
];

/**
 * Kept out of the WAF logs: API keys and session tokens, cookies, the query (a signed link's signature), and the secret
 * header our CloudFront distributions add (whoever read it could skip the per-IP limit by sending it).
 */
export const REDACTED_FIELDS = [
  { singleHeader: { Name: 'authorization' } },
  { singleHeader: { Name: 'cookie' } },
  { queryString: {} },
  { singleHeader: { Name: ORIGIN_VERIFY_HEADER } },
] as const;

export interface ServiceWebAclProps {
  /** REGIONAL for the API stage; CLOUDFRONT (in us-east-1) for the dashboard's distribution. */
  scope: 'REGIONAL' | 'CLOUDFRONT';
  /** Requests per 5 minutes from one IP address before WAF answers 429. */
  requestsPerIp: number;
  /**
   * Requests carrying this header came through our CloudFront distributions, whose own web ACL counted them per
   * client: the per-IP rule here skips them, since their source address is one of CloudFront's, shared by every
   * client behind it (regional ACL only).
   */
  fromOurEdge?: { name: string; value: string };
  /** Requests per 5 minutes carrying one Authorization value (an API key or a session token, normalized). */
  requestsPerCredential: number;
  /** The ACL's name (unique per stack) and the prefix of its rules' CloudWatch metric names. */
  name: string;
}

const JSON_BODIES = {
  tooManyRequests: '{"message":"Too Many Requests"}',
  bodyTooLarge: `{"message":"Request body larger than ${MAX_BODY_BYTES} bytes"}`,
  malformedApiKey:
    '{"message":"Missing or malformed API key: send Authorization: Bearer sk_live_ and 40 hex characters"}',
};

/** A path that ends with `suffix`: the API stage (`/prod/api/...`) and the dashboard (`/api/...`) alike. */
const pathEndsWith = (suffix: string): wafv2.CfnWebACL.StatementProperty => ({
  byteMatchStatement: {
    fieldToMatch: { uriPath: {} },
    positionalConstraint: 'ENDS_WITH',
    searchString: suffix,
    textTransformations: [{ priority: 0, type: 'NONE' }],
  },
});
const methodIs = (method: string): wafv2.CfnWebACL.StatementProperty => ({
  byteMatchStatement: {
    fieldToMatch: { method: {} },
    positionalConstraint: 'EXACTLY',
    searchString: method,
    textTransformations: [{ priority: 0, type: 'NONE' }],
  },
});
const allOf = (...statements: wafv2.CfnWebACL.StatementProperty[]) => ({ andStatement: { statements } });
const anyOf = (...statements: wafv2.CfnWebACL.StatementProperty[]) => ({ orStatement: { statements } });
const not = (statement: wafv2.CfnWebACL.StatementProperty) => ({ notStatement: { statement } });

/** The signed-link route: GET /api/screenshot. */
const SIGNED_LINK = allOf(methodIs('GET'), pathEndsWith('/api/screenshot'));
/** The routes an API key authenticates: POST /api/screenshot and the MCP server. */
const API_KEY_ROUTES = anyOf(allOf(methodIs('POST'), pathEndsWith('/api/screenshot')), pathEndsWith('/mcp'));

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
      // Sampled requests show every header unredacted (API keys, tokens): the redacted logs below replace them.
      sampledRequestsEnabled: false,
    });
    const refuse = (responseCode: number, body: keyof typeof JSON_BODIES, retryAfter?: string) => ({
      block: {
        customResponse: {
          responseCode,
          customResponseBodyKey: body,
          responseHeaders: [
            { name: 'X-Content-Type-Options', value: 'nosniff' },
            ...(retryAfter ? [{ name: 'Retry-After', value: retryAfter }] : []),
          ],
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
              ...(props.fromOurEdge
                ? {
                    scopeDownStatement: not({
                      byteMatchStatement: {
                        fieldToMatch: { singleHeader: { Name: props.fromOurEdge.name } },
                        positionalConstraint: 'EXACTLY',
                        searchString: props.fromOurEdge.value,
                        textTransformations: [{ priority: 0, type: 'NONE' }],
                      },
                    }),
                  }
                : {}),
            },
          },
          visibilityConfig: visibility('RateLimitPerIp'),
        },
        // Requests without the header are not counted here (WAF skips a missing key); the IP rule covers them.
        {
          // `requestsPerCredential` per 5 minutes for each Authorization value: 429 past it.
          name: 'RateLimitPerCredential',
          priority: 3,
          action: refuse(429, 'tooManyRequests', '60'),
          statement: {
            rateBasedStatement: {
              limit: props.requestsPerCredential,
              evaluationWindowSec: 300,
              aggregateKeyType: 'CUSTOM_KEYS',
              customKeys: [
                { header: { name: 'authorization', textTransformations: CREDENTIAL_TRANSFORMATIONS } },
              ],
            },
          },
          visibilityConfig: visibility('RateLimitPerCredential'),
        },
        // No rule per signed link's keyId: WAF runs before CloudFront's cache and cannot check a signature, so it
        // would count every cached load and every forged request naming the key, and anyone who saw one of a
        // customer's public links could blank all of them (red team). A forged link costs the handler one read and
        // a 401; a valid one is answered from the edge, or spends the key's own signed-link budget.
        {
          // A missing or malformed key would only be refused with 401 by the handler: refuse it before any function
          // starts. Well-formed but unknown keys still reach the handler, which alone knows them.
          name: 'MalformedApiKey',
          priority: 5,
          action: refuse(401, 'malformedApiKey'),
          statement: allOf(
            API_KEY_ROUTES,
            not({
              regexMatchStatement: {
                fieldToMatch: { singleHeader: { Name: 'authorization' } },
                regexString: WELL_FORMED_API_KEY_HEADER,
                textTransformations: CREDENTIAL_TRANSFORMATIONS,
              },
            }),
          ),
          visibilityConfig: visibility('MalformedApiKey'),
        },
        managed('AWSManagedRulesCommonRuleSet', 6, [
          ...COMMON_RULES_COUNTED,
          ...Object.keys(COMMON_QUERY_RULES),
        ]),
        {
          // The query rules counted above block everywhere but on the signed-link route.
          name: 'CommonQueryRulesOutsideSignedLinks',
          priority: 7,
          action: { block: {} },
          statement: allOf(
            anyOf(
              ...Object.values(COMMON_QUERY_RULES).map(
                (label): wafv2.CfnWebACL.StatementProperty => ({
                  labelMatchStatement: { scope: 'LABEL', key: `${COMMON_RULE_SET_LABELS}${label}` },
                }),
              ),
            ),
            not(SIGNED_LINK),
          ),
          visibilityConfig: visibility('CommonQueryRulesOutsideSignedLinks'),
        },
      ],
    });

    // WAF requires the `aws-waf-logs-` prefix on its log groups.
    const logGroup = new logs.LogGroup(this, 'Logs', {
      logGroupName: `aws-waf-logs-${props.name}`,
      retention: logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    new CfnLoggingConfiguration(this, 'Logging', {
      resourceArn: this.acl.attrArn,
      logDestinationConfigs: [logGroup.logGroupArn],
      redactedFields: REDACTED_FIELDS.map((field) => ({ ...field })),
    });
  }
}
