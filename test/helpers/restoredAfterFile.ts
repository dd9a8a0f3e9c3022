import { afterAll } from 'vitest';

/**
 * A mock that lasts for the file that made it. aws-sdk-client-mock's `mockClient(SomeClient)` replaces the class's
 * `send` for the whole process: without this, the files run after it in the same worker (vitest --no-isolate) got
 * the mock too, and their captures answered 500 (a mocked LambdaClient) or their cache missed (a mocked S3Client).
 */
export function restoredAfterFile<Mock extends { restore(): void }>(mock: Mock): Mock {
  afterAll(() => mock.restore());
  return mock;
}
