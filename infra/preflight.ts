import { GetAccountSettingsCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { GetCallerIdentityCommand, type STSClient } from '@aws-sdk/client-sts';
import { type DeploymentSettings, parseSettings, reservedConcurrencies } from './settings';

/** Executions Lambda keeps unreserved in every account and region: no reservation may dip into them. */
export const LAMBDA_UNRESERVED_MINIMUM = 100;

export interface PreflightCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** The clients the preflight asks, made in the environment's region once the settings have been read. */
export type PreflightClients = (region: string) => {
  sts: Pick<STSClient, 'send'>;
  lambda: Pick<LambdaClient, 'send'>;
};

/**
 * Whether an environment would deploy into the account the operator is signed in to, before `cdk deploy` tries:
 * the settings (placeholders refused), the account, the region, and the Lambda concurrency quota against the
 * reservation. Each check says what to do when it fails.
 */
export async function preflight(
  environment: string,
  json: unknown,
  clientsIn: PreflightClients,
): Promise<PreflightCheck[]> {
  let settings: DeploymentSettings;
  try {
    settings = parseSettings(environment, json);
  } catch (error) {
    return [{ name: 'settings', ok: false, detail: (error as Error).message }];
  }
  const clients = clientsIn(settings.region);
  const checks: PreflightCheck[] = [
    { name: 'settings', ok: true, detail: `infra/environments/${environment}.json is valid` },
  ];

  try {
    const { Account, Arn } = await clients.sts.send(new GetCallerIdentityCommand({}));
    checks.push(
      Account === settings.account
        ? { name: 'account', ok: true, detail: `signed in to ${Account} as ${Arn}` }
        : {
            name: 'account',
            ok: false,
            detail: `signed in to ${Account}, but ${environment} deploys to ${settings.account}: sign in to that account`,
          },
    );
  } catch (error) {
    checks.push({
      name: 'account',
      ok: false,
      detail: `no usable AWS credentials: ${(error as Error).name}`,
    });
    return checks;
  }

  try {
    const { AccountLimit } = await clients.lambda.send(new GetAccountSettingsCommand({}));
    checks.push({ name: 'region', ok: true, detail: `Lambda answers in ${settings.region}` });
    checks.push(
      concurrencyCheck(
        settings,
        AccountLimit?.ConcurrentExecutions,
        AccountLimit?.UnreservedConcurrentExecutions,
      ),
    );
  } catch (error) {
    checks.push({
      name: 'region',
      ok: false,
      detail: `Lambda did not answer in ${settings.region} (${(error as Error).name}): enable the region for the account, or fix "region"`,
    });
  }
  return checks;
}

function concurrencyCheck(
  settings: DeploymentSettings,
  quota: number | undefined,
  unreserved: number | undefined,
): PreflightCheck {
  const reserved = reservedConcurrencies(settings);
  const wanted = reserved.total;
  const what =
    `reservations ${wanted} (screenshot front ${reserved.screenshot}, shared renderer ${reserved.sharedRenderer}, ` +
    `headroom renderer ${reserved.headroomRenderer}, from screenshotReservedConcurrency ${settings.screenshotReservedConcurrency})`;
  const room = (unreserved ?? 0) - LAMBDA_UNRESERVED_MINIMUM;
  return wanted <= room
    ? {
        name: 'concurrency',
        ok: true,
        detail: `${what} fit: ${unreserved} of ${quota} unreserved, ${LAMBDA_UNRESERVED_MINIMUM} must stay so`,
      }
    : {
        name: 'concurrency',
        ok: false,
        detail:
          `${what} do not fit: the quota is ${quota} with ${unreserved} unreserved, ` +
          `and Lambda keeps ${LAMBDA_UNRESERVED_MINIMUM} unreserved. Raise "Concurrent executions" in Service ` +
          `Quotas to at least ${(quota ?? 0) - (unreserved ?? 0) + LAMBDA_UNRESERVED_MINIMUM + wanted}, or lower the setting`,
      };
}
