import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { logger } from '../logger';
import { errorAnswer } from './errorResponse';
import { jsonResponse } from './response';

export type ApiRoute = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
export type LambdaProxyHandler = (
  event: APIGatewayProxyEvent,
  context?: Context,
) => Promise<APIGatewayProxyResult>;

/** Wraps a key-management route: request-scoped logging and the one error mapping, in `{ message }` style. */
export function managementHandler(route: ApiRoute): LambdaProxyHandler {
  return async (event, context) => {
    logger.appendKeys({ requestId: context?.awsRequestId ?? event.requestContext?.requestId });
    try {
      const result = await route(event);
      logger.info('request', {
        method: event.httpMethod,
        resource: event.resource,
        status: result.statusCode,
      });
      return result;
    } catch (error) {
      const answer = errorAnswer(error, 'management');
      logger.info('request', { method: event.httpMethod, resource: event.resource, status: answer.status });
      return jsonResponse(answer.status, answer.body, answer.headers);
    } finally {
      logger.resetKeys();
    }
  };
}
