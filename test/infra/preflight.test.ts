import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { preflight } from '../../infra/preflight';
import { restoredAfterFile } from '../helpers/restoredAfterFile';

const sts = restoredAfterFile(mockClient(STSClient));
const lambda = restoredAfterFile(mockClient(LambdaClient));
const ACCOUNT = '493817265034';
const settings = {
  stackName: 'Shots-prod',
  account: ACCOUNT,
  region: 'eu-west-1',
  production: true,
  alarmEmails: ['ops@shots.io'],
  screenshotReservedConcurrency: 50,
};
const regions: string[] = [];
const run = (json: unknown = settings) =>
  preflight('prod', json, (region) => {
    regions.push(region);
    return { sts: new STSClient({ region }), lambda: new LambdaClient({ region }) };
  });
const byName = (checks: Awaited<ReturnType<typeof run>>) =>
  Object.fromEntries(checks.map((c) => [c.name, c]));

beforeEach(() => {
  sts.reset();
  lambda.reset();
  regions.length = 0;
  sts
    .on(GetCallerIdentityCommand)
    .resolves({ Account: ACCOUNT, Arn: `arn:aws:iam::${ACCOUNT}:user/operator` });
  lambda
    .on(GetAccountSettingsCommand)
    .resolves({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 1000 } });
});

describe('npm run preflight', () => {
  it('passes every check for valid settings in the signed-in account, asking in the environment’s region', async () => {
    const checks = await run();
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ['settings', true],
      ['account', true],
      ['region', true],
      ['concurrency', true],
    ]);
    expect(regions).toEqual(['eu-west-1']);
  });

  it('refuses placeholder account ids and example addresses before asking AWS anything', async () => {
    const checks = await run({ ...settings, account: '111111111111', alarmEmails: ['ops@example.com'] });
    expect(checks).toHaveLength(1);
    expect(checks[0]?.ok).toBe(false);
    expect(checks[0]?.detail).toMatch(/111111111111 is a placeholder/);
    expect(checks[0]?.detail).toMatch(/ops@example.com is an example address/);
    expect(sts.commandCalls(GetCallerIdentityCommand)).toHaveLength(0);
  });

  it('fails when signed in to another account', async () => {
    sts
      .on(GetCallerIdentityCommand)
      .resolves({ Account: '999988887777', Arn: 'arn:aws:iam::999988887777:user/x' });
    const account = byName(await run()).account;
    expect(account?.ok).toBe(false);
    expect(account?.detail).toContain(ACCOUNT);
  });

  it('fails without credentials, and stops there', async () => {
    sts
      .on(GetCallerIdentityCommand)
      .rejects(Object.assign(new Error('no'), { name: 'CredentialsProviderError' }));
    const checks = await run();
    expect(byName(checks).account?.detail).toMatch(/CredentialsProviderError/);
    expect(lambda.commandCalls(GetAccountSettingsCommand)).toHaveLength(0);
  });

  it('fails a reservation a new account’s quota cannot hold (quota 10), naming the quota to ask for', async () => {
    lambda
      .on(GetAccountSettingsCommand)
      .resolves({ AccountLimit: { ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 10 } });
    const concurrency = byName(await run()).concurrency;
    expect(concurrency?.ok).toBe(false);
    expect(concurrency?.detail).toMatch(/at least 200/);
  });

  it('counts the reservations other stacks already hold', async () => {
    lambda
      .on(GetAccountSettingsCommand)
      .resolves({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 199 } });
    expect(byName(await run()).concurrency?.ok).toBe(false);
    lambda
      .on(GetAccountSettingsCommand)
      .resolves({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 200 } });
    expect(byName(await run()).concurrency?.ok).toBe(true);
  });

  it('checks the sum of every reservation: the screenshot front’s and both renderers’', async () => {
    lambda
      .on(GetAccountSettingsCommand)
      .resolves({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 1000 } });
    const detail = byName(await run()).concurrency?.detail;
    expect(detail).toMatch(/reservations 100 \(screenshot front 50, shared renderer 45, headroom renderer 5/);
  });

  it('fails a region where Lambda does not answer for the account', async () => {
    lambda
      .on(GetAccountSettingsCommand)
      .rejects(Object.assign(new Error('no'), { name: 'UnrecognizedClientException' }));
    const region = byName(await run()).region;
    expect(region?.ok).toBe(false);
    expect(region?.detail).toMatch(/eu-west-1/);
  });
});
