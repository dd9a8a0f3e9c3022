import { managementHandler } from '../shared/http/managementHandler';
import { getOpenApi } from '../shared/openapi/handler';

// The document is built on the first request and kept for the life of the warm instance.
export const handler = managementHandler(getOpenApi);
