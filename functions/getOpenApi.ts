import { openApiLambda } from '../shared/wiring/lambdaHandlers';

// The document is built on the first request and kept for the life of the warm instance.
export const handler = openApiLambda;
