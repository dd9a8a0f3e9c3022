/**
 * Imported first by the bench entry points: the service's logger reads its level when its module loads, and one
 * JSON line per request would bury the table. Warnings and errors still show. Set POWERTOOLS_LOG_LEVEL to override.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
// Business metrics are EMF lines on stdout, for Lambda's log shipping: here they would bury the table, and the cold
// start child's stdout carries its one report line.
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
