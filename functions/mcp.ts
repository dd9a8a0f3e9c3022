import { streamingRuntime } from '../shared/http/adapter/lambdaStreaming';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { mcpLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService } from '../shared/wiring/screenshot';

/** POST /mcp: the MCP server; each tool call is a screenshot request through the same use case. */
export const handler = streamingRuntime().streamifyResponse(
  mcpLambda(createScreenshotService(createDynamoClient(), process.env)),
);
