import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { capacityOfReserved } from '../shared/accounts/fairShare';
import { operationOf, ROUTES } from '../shared/routes';

/** One committed file per environment, `infra/environments/<name>.json`: the settings are reviewed like code. */
export const ENVIRONMENTS_DIR = fileURLToPath(new URL('./environments', import.meta.url));

const count = (minimum: number, fallback: number) => z.number().int().min(minimum).default(fallback);

/**
 * What an environment's file may say (docs/deploy.md, "Settings"). Unknown keys are refused, so a typo fails
 * synthesis instead of silently keeping a default.
 */
const settingsFile = z
  .strictObject({
    /** CloudFormation stack name; every other name in the stack derives from it or is generated. */
    stackName: z.string().regex(/^[A-Za-z][A-Za-z0-9-]{0,110}$/, 'letters, digits and hyphens'),
    /** The one account and region this environment deploys to: `cdk deploy` refuses other credentials. */
    account: z.string().regex(/^\d{12}$/, '12 digits'),
    region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as eu-west-1'),
    /** Production refuses to synthesize without an alarm subscriber. */
    production: z.boolean(),
    /** Screenshot requests per account per clock hour (docs/api.md, "Rate limit"): RATE_LIMIT_PER_HOUR. */
    rateLimitPerHour: count(1, 100),
    /** One-time grant for a new account; 0 turns it off: FREE_CREDITS. */
    freeCredits: count(0, 100),
    /** Captures one account may run at once (docs/api.md, "Concurrent captures"): MAX_CONCURRENT_CAPTURES. */
    maxConcurrentCaptures: count(1, 10),
    /** Stage-wide requests per second and burst, for everyone together. */
    apiRateLimit: count(1, 50),
    apiBurstLimit: count(1, 100),
    /** POST /api/screenshot alone: each request holds a Chromium for seconds. */
    screenshotRateLimit: count(1, 10),
    screenshotBurstLimit: count(1, 20),
    /**
     * Per route, by operation name (`createKey`, `signedScreenshot`, ...): requests per second and burst. Routes not
     * named keep the stage's throttle, or the screenshot one for the streaming routes.
     */
    routeThrottles: z
      .partialRecord(
        z.enum(ROUTES.map(operationOf) as [string, ...string[]]),
        z.strictObject({ rateLimit: z.number().int().min(1), burstLimit: z.number().int().min(1) }),
      )
      .default({}),
    /**
     * Captures that may run at once: reserved for (and capping) the screenshot front, and as many again for the
     * renderers, split between the shared renderer and the headroom renderer (reservedConcurrencies), so the
     * management routes always have room. Lambda keeps 100 of the account's quota unreserved, so the quota must be
     * at least 100 plus the reservations of every stack in the account and region.
     */
    screenshotReservedConcurrency: count(1, 50),
    /**
     * Shared renderer instances Lambda keeps initialised (provisioned concurrency on its live alias): a capture one
     * of them takes has no cold start, its browser having been launched in the instance's init. Each is billed all
     * the time, used or not (docs/deploy.md, "Costs"); 0, the default, provisions none. At most the
     * shared renderer's reserved concurrency.
     */
    rendererProvisionedConcurrency: count(0, 0),
    /**
     * The version of the `OriginVerify` secret CloudFront's header and the API's per-IP rule use (a Secrets Manager
     * VersionId), once it was rotated: CloudFormation reads a secret again only when the template changes, so a new
     * value takes effect by naming its version here. Absent: the current version when the stack was first made.
     */
    originVerifyVersion: z
      .string()
      .regex(/^[A-Za-z0-9-]{32,64}$/, 'a Secrets Manager VersionId')
      .optional(),
    /** Web ACL rate rules: requests per 5 minutes from one IP address, and with one Authorization value. */
    wafRequestsPerIp: count(10, 1000),
    wafRequestsPerCredential: count(10, 300),
    /** Alarm subscribers: addresses (each confirms AWS's email) and/or an existing SNS topic (pager, chat). */
    alarmEmails: z.array(z.email()).default([]),
    alarmTopicArn: z
      .string()
      .regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]+$/, 'an SNS topic ARN')
      .optional(),
    /**
     * Hosted sign-in domain `<prefix>.auth.<region>.amazoncognito.com`, unique in the region across all AWS
     * accounts. Default: `screenshots-<environment>-<account>`.
     */
    dashboardDomainPrefix: z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, '1-63 lowercase letters, digits or inner hyphens')
      .refine((prefix) => !/aws|amazon|cognito/.test(prefix), 'must not contain aws, amazon or cognito')
      .optional(),
    /** Cognito's emails through SES from a verified identity, instead of Cognito's limited default sender. */
    emailSender: z
      .strictObject({
        fromEmail: z.email(),
        fromName: z.string().min(1).optional(),
        /** Where the SES identity is verified; default: the stack's region. */
        sesRegion: z.string().optional(),
        /** A verified domain, when the address itself is not a verified identity. */
        sesVerifiedDomain: z.string().optional(),
      })
      .optional(),
    /**
     * Whether this stack sets the region's API Gateway CloudWatch logging role, an account-wide setting execution
     * logs need. Two environments in one account and region: exactly one of them sets it.
     */
    apiGatewayLoggingRole: z.boolean().default(true),
    /** Attach this existing table instead of creating one: a point-in-time restore, or one a deleted stack kept. */
    existingTableName: z
      .string()
      .regex(/^[\w.-]{3,255}$/, 'a DynamoDB table name')
      .optional(),
    /** Attach this existing user pool (kept by a deleted stack): owners keep their sub, hence their account. */
    existingUserPoolId: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d_\w+$/, 'a user pool id such as eu-west-1_AbCdEf123')
      .optional(),
    /** How a new function version takes traffic: 10 % for 5 minutes watched by alarms, or at once (development). */
    rollout: z.enum(['canary', 'allAtOnce']).default('canary'),
    /**
     * Ship source maps with every function (stack traces name the TypeScript sources). Off by default: they add
     * megabytes to each package, which the size budget (200 MiB per function, layers included) counts.
     */
    sourceMaps: z.boolean().default(false),
  })
  .refine((s) => s.screenshotRateLimit <= s.apiRateLimit && s.screenshotBurstLimit <= s.apiBurstLimit, {
    message: 'screenshotRateLimit/screenshotBurstLimit cannot exceed apiRateLimit/apiBurstLimit',
  })
  .refine(
    (s) =>
      Object.values(s.routeThrottles).every(
        (t) => t !== undefined && t.rateLimit <= s.apiRateLimit && t.burstLimit <= s.apiBurstLimit,
      ),
    { message: 'routeThrottles cannot exceed apiRateLimit/apiBurstLimit' },
  )
  .refine(
    (s) => s.rendererProvisionedConcurrency <= capacityOfReserved(s.screenshotReservedConcurrency).shared,
    {
      error: (issue) => {
        const { screenshotReservedConcurrency: reserved } = issue.input as {
          screenshotReservedConcurrency: number;
        };
        return `rendererProvisionedConcurrency cannot exceed the shared renderer's reserved concurrency (${
          capacityOfReserved(reserved).shared
        } with screenshotReservedConcurrency ${reserved})`;
      },
    },
  )
  .refine((s) => !s.production || s.alarmEmails.length > 0 || s.alarmTopicArn !== undefined, {
    message:
      'a production environment needs alarmEmails or alarmTopicArn: alarms nobody receives protect nothing',
  });

/** Account ids from examples and documentation: twelve times one digit, or AWS's own sample ids. */
const PLACEHOLDER_ACCOUNT = /^(?:(\d)\1{11}|123456789012|012345678901)$/;
/** Domains reserved for examples (RFC 2606), which never receive mail. */
const PLACEHOLDER_DOMAIN = /(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost)$/i;

/** Every place the settings still hold a placeholder, as `key: reason`. */
export function placeholderProblems(settings: z.infer<typeof settingsFile>): string[] {
  const problems: string[] = [];
  const account = (key: string, id: string) => {
    if (PLACEHOLDER_ACCOUNT.test(id)) problems.push(`${key}: ${id} is a placeholder account id`);
  };
  const address = (key: string, email: string) => {
    if (PLACEHOLDER_DOMAIN.test(email.split('@').pop() ?? '')) {
      problems.push(`${key}: ${email} is an example address nobody receives`);
    }
  };
  account('account', settings.account);
  const topicAccount = settings.alarmTopicArn?.split(':')[4];
  if (topicAccount) account('alarmTopicArn', topicAccount);
  for (const [index, email] of settings.alarmEmails.entries()) address(`alarmEmails.${index}`, email);
  if (settings.emailSender) address('emailSender.fromEmail', settings.emailSender.fromEmail);
  return problems;
}

export interface ParseOptions {
  /**
   * `refuse` (the default, and what the CDK app and the preflight use): placeholder account ids and example
   * addresses fail, so a copied example never deploys. Tests that only read the shape pass `allow`.
   */
  placeholders?: 'refuse' | 'allow';
}

/** The keys an environment file may hold (docs/deploy.md lists each). */
export const SETTING_KEYS = Object.keys(settingsFile.shape);

export type DeploymentSettings = z.infer<typeof settingsFile> & {
  /** The file's name: `dev` for infra/environments/dev.json. */
  environment: string;
  dashboardDomainPrefix: string;
};

/** Validates an environment's settings; a bad file fails synthesis with the key and the reason. */
export function parseSettings(
  environment: string,
  json: unknown,
  options: ParseOptions = {},
): DeploymentSettings {
  const parsed = settingsFile.safeParse(json);
  const reasons = parsed.success
    ? options.placeholders === 'allow'
      ? []
      : placeholderProblems(parsed.data)
    : parsed.error.issues.map((issue) => `${issue.path.join('.') || '(file)'}: ${issue.message}`);
  if (!parsed.success || reasons.length > 0) {
    throw new Error(`infra/environments/${environment}.json: ${reasons.join('; ')}`);
  }
  return {
    ...parsed.data,
    environment,
    dashboardDomainPrefix:
      parsed.data.dashboardDomainPrefix ?? `screenshots-${environment}-${parsed.data.account}`,
  };
}

/** Every committed environment, by file name. */
export function loadEnvironments(dir = ENVIRONMENTS_DIR, options: ParseOptions = {}): DeploymentSettings[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) =>
      parseSettings(
        path.basename(file, '.json'),
        JSON.parse(readFileSync(path.join(dir, file), 'utf8')),
        options,
      ),
    );
}

/**
 * What the stack reserves of the account's concurrency: the screenshot front, and the renderers that capture for it,
 * the shared one and the headroom one (docs/api.md 6.5). The preflight checks their total against the quota.
 */
export function reservedConcurrencies(settings: Pick<DeploymentSettings, 'screenshotReservedConcurrency'>) {
  const capacity = capacityOfReserved(settings.screenshotReservedConcurrency);
  const reserved = {
    screenshot: settings.screenshotReservedConcurrency,
    sharedRenderer: capacity.shared,
    headroomRenderer: capacity.headroom,
  };
  return { ...reserved, total: reserved.screenshot + reserved.sharedRenderer + reserved.headroomRenderer };
}
