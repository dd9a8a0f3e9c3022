import { Match } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANONICAL_LINK_QUERY_SOURCE } from '../../infra/canonicalLinkQuery';
import { ORIGIN_VERIFY_HEADER } from '../../infra/dashboardSite';
import { routeThrottles } from '../../infra/routeThrottles';
import { parseSettings } from '../../infra/settings';
import {
  COMMON_QUERY_RULES,
  COMMON_RULES_COUNTED,
  CREDENTIAL_TRANSFORMATIONS,
  WELL_FORMED_API_KEY_HEADER,
} from '../../infra/webAcl';
import { bearerCredential } from '../../shared/http/request';
import { generateApiKey } from '../../shared/keys/apiKey';
import {
  asList,
  type Json,
  ofType,
  referencedId,
  type SynthesizedStack,
  synthesizeStack,
  TEST_SETTINGS,
} from './synth';

// Templates only: no bundling, the rules are all in the template.
let synth: SynthesizedStack;
beforeAll(() => {
  synth = synthesizeStack(
    {
      ...TEST_SETTINGS,
      routeThrottles: {
        createKey: { rateLimit: 3, burstLimit: 6 },
        signedScreenshot: { rateLimit: 8, burstLimit: 16 },
      },
    },
    false,
  );
}, 120_000);
afterAll(() => synth?.cleanup());

const aclOf = (template: SynthesizedStack['template']) =>
  (Object.values(template.findResources('AWS::WAFv2::WebACL'))[0] as { Properties: Json }).Properties;
function ruleOf(template: SynthesizedStack['template'], name: string): Json {
  const rule = (asList(aclOf(template).Rules) as Json[]).find((r) => r.Name === name);
  if (!rule) throw new Error(`no rule ${name}`);
  return rule;
}

/** What WAF's LOWERCASE then COMPRESS_WHITE_SPACE make of a header value. */
const normalized = (value: string) => value.toLowerCase().replace(/[ \t\n\r\f\v]+/g, ' ');

describe('per-key rate rules at the edge', () => {
  it('count the Authorization header lowercased and with its white space compressed', () => {
    expect(CREDENTIAL_TRANSFORMATIONS.map((t) => t.type)).toEqual(['LOWERCASE', 'COMPRESS_WHITE_SPACE']);
    expect(ruleOf(synth.template, 'RateLimitPerCredential').Statement).toEqual({
      RateBasedStatement: {
        Limit: TEST_SETTINGS.wafRequestsPerCredential,
        EvaluationWindowSec: 300,
        AggregateKeyType: 'CUSTOM_KEYS',
        CustomKeys: [
          {
            Header: {
              Name: 'authorization',
              TextTransformations: [
                { Priority: 0, Type: 'LOWERCASE' },
                { Priority: 1, Type: 'COMPRESS_WHITE_SPACE' },
              ],
            },
          },
        ],
      },
    });
  });

  it('count every case and spacing variant the handler accepts as one key', () => {
    const key = generateApiKey();
    const variants = [
      `Bearer ${key}`,
      `bearer ${key}`,
      `BEARER   ${key}`,
      `BeArEr\t${key}`.replace('\t', '  '),
    ];
    for (const variant of variants) {
      expect(bearerCredential({ headers: { authorization: variant } })).toBe(key);
      expect(normalized(variant)).toBe(`bearer ${key}`);
    }
  });

  it('never count signed links per keyId (WAF runs before the cache and cannot check a signature)', () => {
    // Red team: such a rule counted every cached load and every forged request naming a key, so a popular link, or
    // anyone who saw one of a customer's public links, blanked all of that key's links for everyone.
    for (const template of [synth.template, synth.edgeTemplate]) {
      const acls = Object.values(template.findResources('AWS::WAFv2::WebACL'));
      expect(acls.length).toBeGreaterThan(0);
      for (const acl of acls)
        expect(JSON.stringify((acl as Json).Properties)).not.toContain('"QueryArgument"');
    }
  });
});

describe('malformed API keys at the edge', () => {
  const regex = new RegExp(WELL_FORMED_API_KEY_HEADER);

  it('accepts every header the handler would read a well-formed key from', () => {
    const key = generateApiKey();
    for (const header of [`Bearer ${key}`, `bearer    ${key}`, `BEARER ${key}`]) {
      expect(regex.test(normalized(header))).toBe(true);
    }
  });

  it('refuses junk, other schemes, short keys and session tokens', () => {
    const key = generateApiKey();
    for (const header of [
      '',
      'Bearer',
      `Basic ${key}`,
      `Bearer ${key.slice(0, -1)}`,
      `Bearer ${key}x`,
      'Bearer eyJhbGciOi.x.y',
    ]) {
      expect(regex.test(normalized(header))).toBe(false);
    }
  });

  it('answers 401 before any function on the API-key routes, with the header normalized as for the rate rule', () => {
    const rule = ruleOf(synth.template, 'MalformedApiKey');
    expect(rule.Action).toMatchObject({ Block: { CustomResponse: { ResponseCode: 401 } } });
    const text = JSON.stringify(rule.Statement);
    expect(text).toContain(JSON.stringify(WELL_FORMED_API_KEY_HEADER));
    expect(text).toContain('"NotStatement"');
    expect(text).toContain('"SearchString":"POST"');
    expect(text).toContain('"SearchString":"/mcp"');
    expect(text).toContain('{"Priority":0,"Type":"LOWERCASE"},{"Priority":1,"Type":"COMPRESS_WHITE_SPACE"}');
  });
});

describe('common rule set exceptions', () => {
  it('counts the query rules that bite on signed links, and the body rules', () => {
    const common = (ruleOf(synth.template, 'AWSManagedRulesCommonRuleSet').Statement as Json)
      .ManagedRuleGroupStatement as Json;
    const counted = (asList(common.RuleActionOverrides) as Json[]).map((o) => o.Name);
    expect(counted).toEqual([...COMMON_RULES_COUNTED, ...Object.keys(COMMON_QUERY_RULES)]);
    expect(counted).toEqual(
      expect.arrayContaining([
        'SizeRestrictions_QUERYSTRING',
        'CrossSiteScripting_QUERYARGUMENTS',
        'GenericLFI_QUERYARGUMENTS',
        'GenericRFI_QUERYARGUMENTS',
        'EC2MetaDataSSRF_QUERYARGUMENTS',
      ]),
    );
  });

  it('still blocks those query rules on every route but GET /api/screenshot', () => {
    const rule = ruleOf(synth.template, 'CommonQueryRulesOutsideSignedLinks');
    const common = ruleOf(synth.template, 'AWSManagedRulesCommonRuleSet');
    expect(Number(rule.Priority)).toBeGreaterThan(Number(common.Priority));
    expect(rule.Action).toEqual({ Block: {} });
    const [anyLabel, notSignedLink] = asList(
      ((rule.Statement as Json).AndStatement as Json).Statements,
    ) as Json[];
    const labels = (asList(((anyLabel as Json).OrStatement as Json).Statements) as Json[]).map(
      (s) => (s.LabelMatchStatement as Json).Key,
    );
    expect(labels).toEqual(
      Object.values(COMMON_QUERY_RULES).map((label) => `awswaf:managed:aws:core-rule-set:${label}`),
    );
    const exempt = JSON.stringify((notSignedLink as Json).NotStatement);
    expect(exempt).toContain('"SearchString":"GET"');
    expect(exempt).toContain('"SearchString":"/api/screenshot"');
  });
});

describe('WAF logging', () => {
  for (const [name, template] of [
    ['API', () => synth.template],
    ['dashboard', () => synth.edgeTemplate],
  ] as const) {
    it(`logs the ${name} web ACL with Authorization, cookies, the query (signature) and the origin secret redacted`, () => {
      template().hasResourceProperties('AWS::WAFv2::LoggingConfiguration', {
        RedactedFields: [
          { SingleHeader: { Name: 'authorization' } },
          { SingleHeader: { Name: 'cookie' } },
          { QueryString: {} },
          // Red team: the header that exempts our CloudFront's requests from the per-IP limit was logged in clear.
          { SingleHeader: { Name: ORIGIN_VERIFY_HEADER } },
        ],
      });
      template().hasResourceProperties('AWS::Logs::LogGroup', {
        LogGroupName: Match.stringLikeRegexp('^aws-waf-logs-'),
      });
    });

    it(`samples no ${name} request, since samples would show keys unredacted`, () => {
      const configs = [
        aclOf(template()).VisibilityConfig,
        ...(asList(aclOf(template()).Rules) as Json[]).map((r) => r.VisibilityConfig),
      ];
      for (const config of configs) expect((config as Json).SampledRequestsEnabled).toBe(false);
    });
  }
});

describe('CDN access logs', () => {
  it('logs the distribution to a bucket of its own, without cookies', () => {
    synth.template.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        Logging: Match.objectLike({ IncludeCookies: false, Prefix: 'cloudfront/' }),
      }),
    });
    synth.template.hasResourceProperties('AWS::S3::Bucket', {
      OwnershipControls: { Rules: [{ ObjectOwnership: 'ObjectWriter' }] },
      LifecycleConfiguration: { Rules: [Match.objectLike({ ExpirationInDays: 90 })] },
    });
  });
});

describe('throttles per route', () => {
  it('come from the settings, with the screenshot throttle for streaming routes not named', () => {
    const [, stage] = ofType(synth.resources, 'AWS::ApiGateway::Stage')[0] ?? [];
    const methods = asList(stage?.Properties.MethodSettings) as Json[];
    const of = (method: string, path: string) =>
      methods.find((m) => m.HttpMethod === method && m.ResourcePath === `/${path.replaceAll('/', '~1')}`);
    expect(of('POST', '/api/keys')).toMatchObject({ ThrottlingRateLimit: 3, ThrottlingBurstLimit: 6 });
    expect(of('GET', '/api/screenshot')).toMatchObject({ ThrottlingRateLimit: 8, ThrottlingBurstLimit: 16 });
    expect(of('POST', '/api/screenshot')).toMatchObject({
      ThrottlingRateLimit: TEST_SETTINGS.screenshotRateLimit,
      ThrottlingBurstLimit: TEST_SETTINGS.screenshotBurstLimit,
    });
    expect(of('GET', '/api/keys')).toBeUndefined();
  });

  it('refuse a route throttle above the stage throttle, or an unknown route', () => {
    const base = { stackName: 'Shots-dev', account: '123456789012', region: 'eu-west-1', production: false };
    expect(() =>
      parseSettings('dev', { ...base, routeThrottles: { createKey: { rateLimit: 500, burstLimit: 1 } } }),
    ).toThrow(/routeThrottles/);
    expect(() =>
      parseSettings('dev', { ...base, routeThrottles: { nope: { rateLimit: 1, burstLimit: 1 } } }),
    ).toThrow(/routeThrottles/);
    expect(
      routeThrottles(parseSettings('dev', base, { placeholders: 'allow' })).get('GET /api/keys'),
    ).toBeUndefined();
  });
});

describe('signed links through the CDN', () => {
  const linkDistribution = () =>
    ofType(synth.resources, 'AWS::CloudFront::Distribution').find(
      ([, d]) => (d.Properties.DistributionConfig as Json).Comment === 'Signed screenshot links',
    )?.[1].Properties.DistributionConfig as Json;

  it('key the cache on the whole query string and nothing else, leaving the lifetime to the API within a day', () => {
    synth.template.hasResourceProperties('AWS::CloudFront::CachePolicy', {
      CachePolicyConfig: Match.objectLike({
        // The answer's s-maxage (what is left of the link's cacheTtl) decides, up to a day; no header, not kept.
        MinTTL: 0,
        DefaultTTL: 0,
        MaxTTL: 86_400,
        ParametersInCacheKeyAndForwardedToOrigin: Match.objectLike({
          QueryStringsConfig: { QueryStringBehavior: 'all' },
          HeadersConfig: { HeaderBehavior: 'none' },
          CookiesConfig: { CookieBehavior: 'none' },
        }),
      }),
    });
  });

  it("are what the dashboard builds: config.json names the CDN, and the page may show the link's image from it", () => {
    const linkId = ofType(synth.resources, 'AWS::CloudFront::Distribution').find(
      ([, d]) => (d.Properties.DistributionConfig as Json).Comment === 'Signed screenshot links',
    )?.[0] as string;
    const linkDomain = JSON.stringify({ 'Fn::GetAtt': [linkId, 'DomainName'] });
    const [[, deployment] = []] = ofType(synth.resources, 'Custom::CDKBucketDeployment');
    expect(JSON.stringify(deployment?.Properties.SourceMarkers)).toContain(linkDomain);
    const policies = ofType(synth.resources, 'AWS::CloudFront::ResponseHeadersPolicy').map(([, policy]) =>
      JSON.stringify(policy.Properties),
    );
    const dashboardPolicy = policies.find((policy) => policy.includes('img-src'));
    expect(dashboardPolicy).toContain(linkDomain);
    expect(dashboardPolicy).toMatch(/img-src 'self' blob: https:\/\//);
    // A large cached image's link is a redirect to the image bucket (docs/api.md 15.3): the page may show it too.
    const [[bucketId] = []] = ofType(synth.resources, 'AWS::S3::Bucket').filter(([id]) =>
      id.includes('Images'),
    );
    expect(dashboardPolicy).toContain(JSON.stringify({ 'Fn::GetAtt': [bucketId, 'RegionalDomainName'] }));
  });

  it('put every query in its canonical form before the cache looks it up (canonicalLinkQuery.ts)', () => {
    const behavior = linkDistribution().DefaultCacheBehavior as Json;
    const associations = behavior.FunctionAssociations as { EventType: string; FunctionARN: unknown }[];
    expect(associations.map(({ EventType }) => EventType)).toEqual(['viewer-request']);
    const functions = ofType(synth.resources, 'AWS::CloudFront::Function');
    const [[id, canonical] = []] = functions.filter(
      ([, f]) => f.Properties.FunctionCode === CANONICAL_LINK_QUERY_SOURCE,
    );
    expect(associations[0]?.FunctionARN).toEqual({ 'Fn::GetAtt': [id, 'FunctionARN'] });
    expect(canonical?.Properties).toMatchObject({
      AutoPublish: true,
      FunctionConfig: { Runtime: 'cloudfront-js-2.0' },
    });
  });

  it('pass only GET and HEAD to the API stage, behind the edge web ACL, with access logs', () => {
    const config = linkDistribution();
    const behavior = config.DefaultCacheBehavior as Json;
    expect(behavior.AllowedMethods).toEqual(['GET', 'HEAD']);
    expect(behavior.OriginRequestPolicyId).toBeUndefined();
    expect(JSON.stringify(config.Origins)).toContain('execute-api');
    expect(JSON.stringify(config.Origins)).toContain('"OriginPath":"/prod"');
    expect(config.WebACLId).toBeDefined();
    expect(config.Logging).toMatchObject({ IncludeCookies: false, Prefix: 'links/' });
  });
});

describe('API answers through CloudFront', () => {
  interface Behavior {
    PathPattern?: string;
    TargetOriginId: string;
    ResponseHeadersPolicyId?: unknown;
  }
  /** Every behavior of every distribution, with its distribution's comment and its origin's domain. */
  const behaviors = () =>
    ofType(synth.resources, 'AWS::CloudFront::Distribution').flatMap(([, distribution]) => {
      const config = distribution.Properties.DistributionConfig as Json;
      const origins = asList(config.Origins) as { Id: string; DomainName: unknown }[];
      return [config.DefaultCacheBehavior, ...asList(config.CacheBehaviors)].map((b) => {
        const behavior = b as Behavior;
        const origin = origins.find((o) => o.Id === behavior.TargetOriginId);
        return {
          distribution: String(config.Comment),
          behavior,
          toApi: JSON.stringify(origin?.DomainName).includes('execute-api'),
        };
      });
    });
  const policyOf = (behavior: Behavior) =>
    synth.resources[referencedId(behavior.ResponseHeadersPolicyId) ?? '']?.Properties
      .ResponseHeadersPolicyConfig as Json | undefined;
  const securityHeaders = (behavior: Behavior) => (policyOf(behavior)?.SecurityHeadersConfig ?? {}) as Json;

  it('are fronted by both distributions: the dashboard under /api/*, the signed links everywhere', () => {
    const toApi = behaviors().filter((b) => b.toApi);
    expect(toApi.map((b) => [b.distribution, b.behavior.PathPattern])).toEqual([
      ['Screenshot API dashboard', '/api/*'],
      ['Signed screenshot links', undefined],
    ]);
  });

  it("keep the API's own Content-Security-Policy: no policy in front of the API sets or removes one", () => {
    for (const { behavior } of behaviors().filter((b) => b.toApi)) {
      const policy = policyOf(behavior);
      expect(policy, behavior.TargetOriginId).toBeDefined();
      expect(securityHeaders(behavior).ContentSecurityPolicy).toBeUndefined();
      expect(policy?.RemoveHeadersConfig).toBeUndefined();
    }
  });

  it('carry HTTPS only, nosniff and no referrer; only the dashboard forbids framing (signed links are embedded)', () => {
    for (const { distribution, behavior } of behaviors().filter((b) => b.toApi)) {
      expect(securityHeaders(behavior)).toMatchObject({
        ContentTypeOptions: { Override: true },
        ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
        StrictTransportSecurity: {
          AccessControlMaxAgeSec: 31_536_000,
          IncludeSubdomains: true,
          Override: true,
        },
      });
      expect(securityHeaders(behavior).FrameOptions).toEqual(
        distribution === 'Screenshot API dashboard' ? { FrameOption: 'DENY', Override: true } : undefined,
      );
    }
  });

  it("leave the dashboard's files under the page's own Content-Security-Policy", () => {
    const files = behaviors().find((b) => b.distribution === 'Screenshot API dashboard' && !b.toApi);
    const csp = securityHeaders(files?.behavior as Behavior).ContentSecurityPolicy as Json;
    expect(csp.Override).toBe(true);
    expect(JSON.stringify(csp.ContentSecurityPolicy)).toContain("script-src 'self'");
  });
});
