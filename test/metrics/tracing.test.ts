import { afterEach, describe, expect, it, vi } from 'vitest';

/** The middleware name aws-xray-sdk-core gives the subsegment it opens around each SDK call. */
const XRAY_MIDDLEWARE = 'XRaySDKInstrumentation';

/** createDynamoClient from a fresh module graph, so the tracer reads the environment stubbed for the test. */
async function freshClient() {
  vi.resetModules();
  const { createDynamoClient } = await import('../../shared/store/dynamoClient');
  return createDynamoClient({ region: 'us-east-1' });
}

const middlewareNames = (client: Awaited<ReturnType<typeof freshClient>>) =>
  client.middlewareStack.identify().map((entry) => entry.split(' ')[0]);

describe('X-Ray tracing of the DynamoDB client', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.resetModules();
  });

  it('records a subsegment per call inside Lambda', async () => {
    vi.stubEnv('AWS_EXECUTION_ENV', 'AWS_Lambda_nodejs22.x');
    vi.stubEnv('AWS_SAM_LOCAL', '');
    const client = await freshClient();
    expect(middlewareNames(client)).toContain(XRAY_MIDDLEWARE);
    client.destroy();
  });

  it('wraps nothing outside Lambda (local server, tests, operator tools)', async () => {
    vi.stubEnv('AWS_EXECUTION_ENV', '');
    const client = await freshClient();
    expect(middlewareNames(client)).not.toContain(XRAY_MIDDLEWARE);
    client.destroy();
  });
});
