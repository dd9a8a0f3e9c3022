import { PassThrough } from 'node:stream';
import { CodeDeployClient, PutLifecycleEventHookExecutionStatusCommand } from '@aws-sdk/client-codedeploy';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { preTrafficHook } from '../../shared/rollout/preTrafficHook';
import { isSelfTestEvent, selfTest, withSelfTest } from '../../shared/rollout/selfTest';
import { FakeRenderer } from '../helpers/memoryPorts';
import { restoredAfterFile } from '../helpers/restoredAfterFile';

const lambda = restoredAfterFile(mockClient(LambdaClient));
const codeDeploy = restoredAfterFile(mockClient(CodeDeployClient));
const VERSION_ARN = 'arn:aws:lambda:eu-west-1:123456789012:function:shots-screenshot:42';
const event = { DeploymentId: 'd-ABC', LifecycleEventHookExecutionId: 'hook-1' };
const hook = () =>
  preTrafficHook({
    lambda: new LambdaClient({ region: 'eu-west-1' }),
    codeDeploy: new CodeDeployClient({ region: 'eu-west-1' }),
    functionVersionArn: VERSION_ARN,
    knownPageUrl: 'https://d111.cloudfront.net/',
  });
const payload = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const reported = () =>
  codeDeploy.commandCalls(PutLifecycleEventHookExecutionStatusCommand).map((call) => call.args[0].input);

beforeEach(() => {
  lambda.reset();
  codeDeploy.reset();
  codeDeploy.on(PutLifecycleEventHookExecutionStatusCommand).resolves({});
});

describe('the pre-traffic hook', () => {
  it('invokes the new version (not the alias) with a self-test of the known page', async () => {
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: payload({ ok: true, bytes: 1234 }) as never });
    await hook()(event);
    const [call] = lambda.commandCalls(InvokeCommand);
    expect(call?.args[0].input.FunctionName).toBe(VERSION_ARN);
    expect(JSON.parse(String(call?.args[0].input.Payload))).toEqual({
      selfTest: { url: 'https://d111.cloudfront.net/' },
    });
  });

  it('lets traffic shift when the page was captured', async () => {
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: payload({ ok: true, bytes: 1234 }) as never });
    expect(await hook()(event)).toBe('Succeeded');
    expect(reported()).toEqual([
      { deploymentId: 'd-ABC', lifecycleEventHookExecutionId: 'hook-1', status: 'Succeeded' },
    ]);
  });

  it('fails the deployment when the page did not capture, the version crashed, or the call failed', async () => {
    const answers = [
      () =>
        lambda
          .on(InvokeCommand)
          .resolves({ Payload: payload({ ok: false, reason: 'Browser could not be started' }) as never }),
      () => lambda.on(InvokeCommand).resolves({ FunctionError: 'Unhandled', Payload: payload({}) as never }),
      () => lambda.on(InvokeCommand).rejects(new Error('AccessDeniedException')),
      () => lambda.on(InvokeCommand).resolves({ Payload: new TextEncoder().encode('not json') as never }),
    ];
    for (const answer of answers) {
      lambda.reset();
      answer();
      expect(await hook()(event)).toBe('Failed');
    }
    expect(reported().map((input) => input.status)).toEqual(['Failed', 'Failed', 'Failed', 'Failed']);
  });
});

describe('the self-test', () => {
  it('is only a direct invocation, never an API Gateway event', () => {
    expect(isSelfTestEvent({ selfTest: { url: 'https://example.net/' } })).toBe(true);
    expect(isSelfTestEvent({ httpMethod: 'POST', selfTest: { url: 'https://example.net/' } })).toBe(false);
    expect(isSelfTestEvent({ selfTest: {} })).toBe(false);
    expect(isSelfTestEvent(null)).toBe(false);
  });

  it('captures the page with the renderer and reports the image size', async () => {
    const renderer = new FakeRenderer();
    const result = await selfTest(renderer, 'https://known.example.net/');
    expect(result.ok).toBe(true);
    expect(result.bytes).toBeGreaterThan(0);
    expect(renderer.captures[0]?.spec.url).toBe('https://known.example.net/');
  });

  it('reports the reason a capture failed', async () => {
    // FakeRenderer fails any URL containing "fail".
    expect(await selfTest(new FakeRenderer(), 'https://fail.example.net/')).toEqual({
      ok: false,
      reason: 'Navigation timed out',
    });
  });

  it('answers the event itself and passes every other event to the API', async () => {
    let apiCalls = 0;
    const handler = withSelfTest(async () => {
      apiCalls++;
    }, new FakeRenderer());
    const stream = new PassThrough();
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    await handler({ selfTest: { url: 'https://known.example.net/' } } as never, stream, {} as never);
    expect(JSON.parse(Buffer.concat(chunks).toString('utf8'))).toMatchObject({ ok: true });
    expect(apiCalls).toBe(0);
    await handler({ httpMethod: 'GET' } as never, new PassThrough(), {} as never);
    expect(apiCalls).toBe(1);
  });
});
