import { CfnOutput, Duration, Validations } from 'aws-cdk-lib';
import type * as apigateway from 'aws-cdk-lib/aws-apigateway';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { CANONICAL_LINK_QUERY_SOURCE } from './canonicalLinkQuery';
import { apiStageOrigin, type OriginVerifyHeader } from './dashboardSite';
import { apiResponseHeadersPolicy } from './responseHeaders';

export interface SignedLinkCdnProps {
  api: apigateway.IRestApi;
  stageName: string;
  /** The edge stack's web ACL (scope CLOUDFRONT): the same rules as the dashboard's. */
  webAclArn: string;
  /** Where the access logs go (the dashboard's log bucket, under `links/`). */
  logBucket: s3.IBucket;
  /** Added to every request sent to the API (apiStageOrigin). */
  originVerify: OriginVerifyHeader;
}

/** The longest an edge keeps an answer, whatever the origin says. */
export const LINK_EDGE_MAX_TTL = Duration.days(1);

/**
 * Signed GET links served through CloudFront: the cache key is the whole query string (the options, `keyId` and
 * `signature`, put in their canonical form first) and nothing else, so a popular `<img>` is answered at the edge for
 * as long as the API's `Cache-Control` allows, and only misses reach the API (and its budgets). Only GET and HEAD
 * pass; no header or cookie is forwarded, which is what a signed link allows anyway.
 */
export class SignedLinkCdn extends Construct {
  readonly distribution: cloudfront.Distribution;
  readonly cachePolicy: cloudfront.CachePolicy;
  /** Signed links go to `<baseUrl>/api/screenshot?...`. */
  readonly baseUrl: string;

  constructor(scope: Construct, id: string, props: SignedLinkCdnProps) {
    super(scope, id);
    this.cachePolicy = new cloudfront.CachePolicy(this, 'CachePolicy', {
      comment: 'Signed screenshot links: the whole query is the key; the API says how long',
      queryStringBehavior: cloudfront.CacheQueryStringBehavior.all(),
      headerBehavior: cloudfront.CacheHeaderBehavior.none(),
      cookieBehavior: cloudfront.CacheCookieBehavior.none(),
      // The API's Cache-Control decides (s-maxage: what is left of the link's own cacheTtl), up to a day; an answer
      // without one (an error) is not kept.
      minTtl: Duration.seconds(0),
      defaultTtl: Duration.seconds(0),
      maxTtl: LINK_EDGE_MAX_TTL,
    });
    this.distribution = new cloudfront.Distribution(this, 'Distribution', {
      comment: 'Signed screenshot links',
      webAclId: props.webAclArn,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket: props.logBucket,
      logFilePrefix: 'links/',
      logIncludesCookies: false,
      defaultBehavior: {
        origin: apiStageOrigin(props.api, props.stageName, props.originVerify),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_GET_HEAD,
        cachedMethods: cloudfront.CachedMethods.CACHE_GET_HEAD,
        cachePolicy: this.cachePolicy,
        // The API's Content-Security-Policy (`sandbox` for a PDF) passes untouched; no X-Frame-Options, since links
        // are made to be embedded in other sites' pages.
        responseHeadersPolicy: apiResponseHeadersPolicy(this, 'SecurityHeaders', {
          comment: "Signed screenshot links: the API's own Content-Security-Policy, common security headers",
        }),
        // Images are compressed already.
        compress: false,
        // One cache key per link, however its query is spelt (canonicalLinkQuery.ts).
        functionAssociations: [
          {
            eventType: cloudfront.FunctionEventType.VIEWER_REQUEST,
            function: new cloudfront.Function(this, 'CanonicalQuery', {
              comment: 'Signed screenshot links: the query in its canonical form before the cache key',
              runtime: cloudfront.FunctionRuntime.JS_2_0,
              code: cloudfront.FunctionCode.fromInline(CANONICAL_LINK_QUERY_SOURCE),
            }),
          },
        ],
      },
    });
    this.baseUrl = `https://${this.distribution.distributionDomainName}`;
    new CfnOutput(this, 'SignedLinkBaseUrl', {
      value: this.baseUrl,
      description: 'Signed links served from the edge: <SignedLinkBaseUrl>/api/screenshot?...',
    });
    const acknowledge = (rule: string, reason: string) =>
      Validations.of(this.distribution).acknowledge({ id: `AwsSolutions-${rule}`, reason });
    acknowledge(
      'CFR1',
      'Signed links are embedded in pages for viewers anywhere; the links carry their own authorization.',
    );
    acknowledge(
      'CFR4',
      'The default *.cloudfront.net certificate cannot set a minimum TLS version; with a custom domain, set ' +
        'TLSv1.2_2021. The API origin is reached over TLS 1.2 only.',
    );
  }
}
