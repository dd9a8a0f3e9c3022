import { Logger } from '@aws-lambda-powertools/logger';

/**
 * The one structured logger. Never pass it a key, a token or an Authorization header: log ids and hashes' prefixes.
 * Level comes from POWERTOOLS_LOG_LEVEL (tests set SILENT).
 */
export const logger = new Logger({ serviceName: 'screenshot-service' });
