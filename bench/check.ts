/** `npx tsx --no-cache bench/check.ts [results.json]`: checks the targets against a saved run (default: the latest). */
import { readFile } from 'node:fs/promises';
import type { BenchResults } from './results';
import { checkTargets, formatTargets } from './targets';

const file = process.argv[2] ?? new URL('./results/latest.json', import.meta.url).pathname;
const results = JSON.parse(await readFile(file, 'utf8')) as BenchResults;
const targets = checkTargets(results);
console.log(formatTargets(targets));
process.exitCode = targets.some((t) => t.pass === false) ? 1 : 0;
