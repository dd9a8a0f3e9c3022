import { streamingRuntime } from '../shared/http/adapter/lambdaStreaming';
import { createDynamoClient } from '../shared/store/dynamoClient';
import { mcpLambda } from '../shared/wiring/lambdaHandlers';
import { createScreenshotService, invokedRenderer } from '../shared/wiring/screenshot';

/**
 * POST /mcp: the MCP server, a front like the screenshot function. Each tool call is a screenshot request through the
 * same use case, and its capture is asked of the renderer function; no browser here.
 */
export const handler = streamingRuntime().streamifyResponse(
  mcpLambda(
    createScreenshotService(createDynamoClient(), process.env, { renderer: invokedRenderer(process.env) }),
  ),
);
