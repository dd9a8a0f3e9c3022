import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHROMIUM_PACKAGE, runtimeClosure } from '../../infra/chromiumLayer';
import { loadEnvironments, parseSettings } from '../../infra/settings';
import { PROJECT_ROOT } from '../../infra/stack';

const minimal = { stackName: 'Shots-dev', account: '123456789012', region: 'eu-west-1', production: false };
const parse = (extra: Record<string, unknown>) =>
  parseSettings('dev', { ...minimal, ...extra }, { placeholders: 'allow' });

describe('parseSettings', () => {
  it('fills the decisions defaults and derives a sign-in domain prefix unique to the environment and account', () => {
    const settings = parse({});
    expect(settings).toMatchObject({
      environment: 'dev',
      rateLimitPerHour: 100,
      freeCredits: 100,
      screenshotReservedConcurrency: 50,
      rollout: 'canary',
      dashboardDomainPrefix: 'screenshots-dev-123456789012',
    });
  });

  it('names the file and the key of a bad value', () => {
    expect(() => parse({ rateLimitPerHour: 0 })).toThrow(/dev\.json: rateLimitPerHour/);
    expect(() => parse({ freeCredits: 1.5 })).toThrow(/freeCredits/);
    expect(() => parse({ account: '12345' })).toThrow(/account/);
  });

  it('refuses keys it does not know, so a typo never falls back to a default', () => {
    expect(() => parse({ rateLimitPerHuor: 500 })).toThrow(/rateLimitPerHuor/);
  });

  it('refuses a screenshot throttle above the stage throttle', () => {
    expect(() => parse({ screenshotRateLimit: 500 })).toThrow(/cannot exceed/);
  });

  it('provisions no renderer by default, and never more than the shared renderer reserves', () => {
    expect(parse({}).rendererProvisionedConcurrency).toBe(0);
    expect(parse({ rendererProvisionedConcurrency: 45 }).rendererProvisionedConcurrency).toBe(45);
    // 50 reserved: 45 for the shared renderer, 5 for the headroom.
    expect(() => parse({ rendererProvisionedConcurrency: 46 })).toThrow(
      /rendererProvisionedConcurrency cannot exceed the shared renderer's reserved concurrency \(45 with screenshotReservedConcurrency 50\)/,
    );
    expect(() => parse({ rendererProvisionedConcurrency: -1 })).toThrow(/rendererProvisionedConcurrency/);
  });

  it('refuses a production environment nobody receives alarms from', () => {
    expect(() => parse({ production: true })).toThrow(/alarmEmails or alarmTopicArn/);
    expect(
      parse({ production: true, alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:pager' }).production,
    ).toBe(true);
  });

  it('refuses a domain prefix Cognito would refuse', () => {
    for (const bad of ['Upper', '-leading', 'trailing-', 'my-aws-shots', 'has space', 'a'.repeat(64)]) {
      expect(() => parse({ dashboardDomainPrefix: bad })).toThrow(/dashboardDomainPrefix/);
    }
  });

  it('accepts an alarm email address and refuses anything else', () => {
    expect(parse({ alarmEmails: ['ops@example.com', 'pager@example.com'] }).alarmEmails).toEqual([
      'ops@example.com',
      'pager@example.com',
    ]);
    expect(() => parse({ alarmEmails: ['not an address'] })).toThrow(/alarmEmails/);
  });
});

describe('placeholders', () => {
  const real = { stackName: 'Shots-prod', account: '493817265034', region: 'eu-west-1', production: true };
  const strict = (extra: Record<string, unknown>) => parseSettings('prod', { ...real, ...extra });

  it('refuses placeholder account ids, in the account and in the alarm topic', () => {
    for (const account of ['111111111111', '222222222222', '123456789012', '000000000000']) {
      expect(() => strict({ account, alarmEmails: ['ops@shots.io'] })).toThrow(/account: .* placeholder/);
    }
    expect(() => strict({ alarmTopicArn: 'arn:aws:sns:eu-west-1:111111111111:pager' })).toThrow(
      /alarmTopicArn: 111111111111 is a placeholder/,
    );
  });

  it('refuses example addresses nobody receives', () => {
    for (const email of ['ops@example.com', 'ops@mail.example.org', 'ops@example.net', 'ops@shots.example']) {
      expect(() => strict({ alarmEmails: ['ops@shots.io', email] })).toThrow(
        /alarmEmails\.1: .* example address/,
      );
    }
    expect(() =>
      strict({ alarmEmails: ['ops@shots.io'], emailSender: { fromEmail: 'no-reply@example.com' } }),
    ).toThrow(/emailSender\.fromEmail/);
  });

  it('accepts real values, and placeholders only when asked to', () => {
    expect(strict({ alarmEmails: ['ops@shots.io'] }).account).toBe('493817265034');
    expect(() => loadEnvironments()).toThrow(/placeholder/);
  });
});

describe('loadEnvironments', () => {
  it('reads every committed environment, each with its own stack name', () => {
    const environments = loadEnvironments(undefined, { placeholders: 'allow' });
    expect(environments.map((settings) => settings.environment)).toEqual(['dev', 'prod']);
    expect(new Set(environments.map((settings) => settings.stackName)).size).toBe(environments.length);
  });

  it('has production alarms go somewhere and production rollouts go through the canary', () => {
    const prod = loadEnvironments(undefined, { placeholders: 'allow' }).find(
      (settings) => settings.environment === 'prod',
    );
    expect(prod?.production).toBe(true);
    expect(prod?.alarmEmails[0] ?? prod?.alarmTopicArn).toBeDefined();
    expect(prod?.rollout).toBe('canary');
  });

  it('reads the environments of a given folder by file name', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'environments-'));
    try {
      writeFileSync(path.join(dir, 'staging.json'), JSON.stringify(minimal));
      expect(
        loadEnvironments(dir, { placeholders: 'allow' }).map((settings) => settings.environment),
      ).toEqual(['staging']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('runtimeClosure', () => {
  it('finds the Chromium package and every runtime dependency it needs, transitively', () => {
    const names = runtimeClosure(CHROMIUM_PACKAGE, PROJECT_ROOT).map((pkg) => pkg.name);
    expect(names).toContain(CHROMIUM_PACKAGE);
    // Direct dependencies of @sparticuz/chromium and one level below (tar-fs -> tar-stream).
    expect(names).toEqual(expect.arrayContaining(['tar-fs', 'tar-stream']));
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
