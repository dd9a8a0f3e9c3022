/**
 * Imported first by the bench entry points: the service's logger reads its level when its module loads, and one
 * JSON line per request would bury the table. Warnings and errors still show. Set POWERTOOLS_LOG_LEVEL to override.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
