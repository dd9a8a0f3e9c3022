import { Tracer } from '@aws-lambda-powertools/tracer';

/**
 * The one X-Ray tracer. It records only inside Lambda with active tracing (the stack turns it on); locally and in
 * tests it is off and wraps nothing. AWS SDK clients are passed through `tracer.captureAWSv3Client` where they are
 * built (shared/store/dynamoClient.ts), so every DynamoDB call is a subsegment of the invocation's trace.
 */
export const tracer = new Tracer({ serviceName: 'screenshot-service' });
