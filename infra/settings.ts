/**
 * Deployment settings an operator chooses at `cdk deploy` time, passed as CDK context (`-c name=value` or the
 * `context` block of cdk.json). Context rather than CfnParameters: the values are validated at synthesis, show up in
 * the template as plain numbers the tests can assert, and changing one is an ordinary `cdk deploy -c ...`.
 */
export interface DeploymentSettings {
  /** Screenshot requests per account per clock hour (decisions.md, "Rate limit"); sets RATE_LIMIT_PER_HOUR. */
  rateLimitPerHour: number;
  /** One-time grant for a new account; 0 turns it off (decisions.md, "Credits"); sets FREE_CREDITS. */
  freeCredits: number;
  /** Captures one account may run at once (docs/api.md, "Concurrent captures"); sets MAX_CONCURRENT_CAPTURES. */
  maxConcurrentCaptures: number;
  /** Stage-wide steady-state requests per second: a first line against floods, before any Lambda runs. */
  apiRateLimit: number;
  /** Stage-wide burst (token bucket size). */
  apiBurstLimit: number;
  /** Steady-state requests per second for POST /api/screenshot alone: each one holds a Chromium for seconds. */
  screenshotRateLimit: number;
  /** Burst for POST /api/screenshot. */
  screenshotBurstLimit: number;
  /** Optional address subscribed to the alarm topic. */
  alarmEmail?: string;
  /**
   * Prefix of the dashboard's hosted sign-in domain, `<prefix>.auth.<region>.amazoncognito.com`, unique in the region
   * across all AWS accounts. Default (in the stack): `screenshots-<account id>`.
   */
  dashboardDomainPrefix?: string;
}

export const DEFAULT_SETTINGS: Readonly<
  Required<Omit<DeploymentSettings, 'alarmEmail' | 'dashboardDomainPrefix'>>
> = {
  rateLimitPerHour: 100,
  freeCredits: 100,
  maxConcurrentCaptures: 10,
  apiRateLimit: 50,
  apiBurstLimit: 100,
  screenshotRateLimit: 10,
  screenshotBurstLimit: 20,
};

/** Context keys, one per setting; documented in docs/deploy.md. */
export const CONTEXT_KEYS = {
  rateLimitPerHour: 'rateLimitPerHour',
  freeCredits: 'freeCredits',
  maxConcurrentCaptures: 'maxConcurrentCaptures',
  apiRateLimit: 'apiRateLimit',
  apiBurstLimit: 'apiBurstLimit',
  screenshotRateLimit: 'screenshotRateLimit',
  screenshotBurstLimit: 'screenshotBurstLimit',
  alarmEmail: 'alarmEmail',
  dashboardDomainPrefix: 'dashboardDomainPrefix',
} as const satisfies Record<keyof DeploymentSettings, string>;

type NumericSetting = keyof typeof DEFAULT_SETTINGS;

/** Smallest accepted value of each number; the same floors shared/config.ts enforces at run time. */
const MINIMUM: Record<NumericSetting, number> = {
  rateLimitPerHour: 1,
  freeCredits: 0,
  maxConcurrentCaptures: 1,
  apiRateLimit: 1,
  apiBurstLimit: 1,
  screenshotRateLimit: 1,
  screenshotBurstLimit: 1,
};

/**
 * Reads the settings from a context lookup (`app.node.tryGetContext`). `-c x=5` arrives as the string "5", cdk.json
 * values as numbers; both are accepted. A bad value fails synthesis with a message naming the key, rather than
 * deploying a function that would refuse to start.
 */
export function readSettings(tryGetContext: (key: string) => unknown): DeploymentSettings {
  const numbers = {} as Record<NumericSetting, number>;
  for (const name of Object.keys(DEFAULT_SETTINGS) as NumericSetting[]) {
    numbers[name] = integerSetting(
      CONTEXT_KEYS[name],
      tryGetContext(CONTEXT_KEYS[name]),
      DEFAULT_SETTINGS[name],
      MINIMUM[name],
    );
  }
  if (
    numbers.screenshotRateLimit > numbers.apiRateLimit ||
    numbers.screenshotBurstLimit > numbers.apiBurstLimit
  ) {
    throw new Error('screenshotRateLimit/screenshotBurstLimit cannot exceed apiRateLimit/apiBurstLimit');
  }
  const settings: DeploymentSettings = { ...numbers };
  const alarmEmail = tryGetContext(CONTEXT_KEYS.alarmEmail);
  if (alarmEmail !== undefined && alarmEmail !== '') {
    if (typeof alarmEmail !== 'string' || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(alarmEmail)) {
      throw new Error(`Context "${CONTEXT_KEYS.alarmEmail}" must be an email address`);
    }
    settings.alarmEmail = alarmEmail;
  }
  const prefix = tryGetContext(CONTEXT_KEYS.dashboardDomainPrefix);
  if (prefix !== undefined && prefix !== '') {
    // Cognito's rules for a domain prefix: lowercase letters, digits and inner hyphens; no reserved words.
    if (
      typeof prefix !== 'string' ||
      !/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(prefix) ||
      /aws|amazon|cognito/.test(prefix)
    ) {
      throw new Error(
        `Context "${CONTEXT_KEYS.dashboardDomainPrefix}" must be 1-63 lowercase letters, digits or inner hyphens, ` +
          'without "aws", "amazon" or "cognito"',
      );
    }
    settings.dashboardDomainPrefix = prefix;
  }
  return settings;
}

function integerSetting(key: string, raw: unknown, fallback: number, minimum: number): number {
  if (raw === undefined || raw === null || raw === '') return fallback;
  const value =
    typeof raw === 'number' ? raw : typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < minimum) {
    throw new Error(`Context "${key}" must be an integer >= ${minimum}, got ${JSON.stringify(raw)}`);
  }
  return value;
}
