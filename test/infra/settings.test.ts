import { describe, expect, it } from 'vitest';
import { CHROMIUM_PACKAGE, runtimeClosure } from '../../infra/chromiumLayer';
import { CONTEXT_KEYS, DEFAULT_SETTINGS, readSettings } from '../../infra/settings';
import { PROJECT_ROOT } from '../../infra/stack';

const context =
  (values: Record<string, unknown>) =>
  (key: string): unknown =>
    values[key];

describe('readSettings', () => {
  it('uses the decisions defaults when no context is given', () => {
    expect(readSettings(context({}))).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS.rateLimitPerHour).toBe(100);
    expect(DEFAULT_SETTINGS.freeCredits).toBe(100);
  });

  it('reads numbers given on the command line as strings', () => {
    const settings = readSettings(
      context({ [CONTEXT_KEYS.rateLimitPerHour]: '250', [CONTEXT_KEYS.freeCredits]: '0' }),
    );
    expect(settings.rateLimitPerHour).toBe(250);
    expect(settings.freeCredits).toBe(0);
  });

  it('reads numbers given in cdk.json as numbers', () => {
    expect(readSettings(context({ [CONTEXT_KEYS.apiRateLimit]: 80 })).apiRateLimit).toBe(80);
  });

  it('refuses a rate limit below one request per hour', () => {
    expect(() => readSettings(context({ [CONTEXT_KEYS.rateLimitPerHour]: '0' }))).toThrow(/rateLimitPerHour/);
  });

  it('refuses negative, fractional or non-numeric values', () => {
    for (const bad of ['-1', '1.5', 'ten', 2.5, true]) {
      expect(() => readSettings(context({ [CONTEXT_KEYS.freeCredits]: bad }))).toThrow(/freeCredits/);
    }
  });

  it('refuses a screenshot throttle above the stage throttle', () => {
    expect(() => readSettings(context({ [CONTEXT_KEYS.screenshotRateLimit]: '500' }))).toThrow(
      /cannot exceed/,
    );
  });

  it('accepts a valid dashboard sign-in domain prefix', () => {
    expect(
      readSettings(context({ [CONTEXT_KEYS.dashboardDomainPrefix]: 'acme-shots-1' })).dashboardDomainPrefix,
    ).toBe('acme-shots-1');
  });

  it('refuses a domain prefix Cognito would refuse', () => {
    for (const bad of ['Upper', '-leading', 'trailing-', 'my-aws-shots', 'has space', 'a'.repeat(64)]) {
      expect(() => readSettings(context({ [CONTEXT_KEYS.dashboardDomainPrefix]: bad }))).toThrow(
        /dashboardDomainPrefix/,
      );
    }
  });

  it('accepts an alarm email address and refuses anything else', () => {
    expect(readSettings(context({ [CONTEXT_KEYS.alarmEmail]: 'ops@example.com' })).alarmEmail).toBe(
      'ops@example.com',
    );
    expect(() => readSettings(context({ [CONTEXT_KEYS.alarmEmail]: 'not an address' }))).toThrow(
      /alarmEmail/,
    );
  });
});

describe('runtimeClosure', () => {
  it('finds the Chromium package and every runtime dependency it needs, transitively', () => {
    const names = runtimeClosure(CHROMIUM_PACKAGE, PROJECT_ROOT).map((pkg) => pkg.name);
    expect(names).toContain(CHROMIUM_PACKAGE);
    // Direct dependencies of @sparticuz/chromium and one level below (tar-fs -> tar-stream).
    expect(names).toEqual(expect.arrayContaining(['follow-redirects', 'tar-fs', 'tar-stream']));
  });

  it('lists each installed package once, at its place under node_modules', () => {
    const closure = runtimeClosure(CHROMIUM_PACKAGE, PROJECT_ROOT);
    const places = closure.map((pkg) => pkg.relativeDir);
    expect(new Set(places).size).toBe(places.length);
    for (const pkg of closure) expect(pkg.relativeDir.endsWith(pkg.name)).toBe(true);
  });

  it('fails loudly when a required package is not installed', () => {
    expect(() => runtimeClosure('no-such-package-for-the-layer', PROJECT_ROOT)).toThrow(/not installed/);
  });
});
