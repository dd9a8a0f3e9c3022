import type { ResidentMemory } from './memory';
import type { BenchResults } from './results';

const MiB = 1024 * 1024;

function fmt(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

/** The results as Markdown tables: readable in a terminal, and pasted as is into docs/performance.md. */
export function markdownReport(results: BenchResults): string {
  const lines = [
    '| scenario | median ms | p95 ms | min ms | max ms | runs |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const row of Object.values(results.scenarios)) {
    if (!row) continue;
    lines.push(
      `| ${row.label} | ${fmt(row.median)} | ${fmt(row.p95)} | ${fmt(row.min)} | ${fmt(row.max)} | ${row.runs} |`,
    );
  }
  const memory = results.memory;
  if (memory) {
    const mb = (bytes: number) => (bytes / MiB).toFixed(0);
    const row = (label: string, m: ResidentMemory, tempBytes: number) =>
      `| ${label} | ${mb(m.nodePssBytes)} | ${mb(m.browserPssBytes)} | ${mb(m.totalPssBytes)} | ${m.browserProcesses} | ${(tempBytes / 1024).toFixed(0)} |`;
    lines.push(
      '',
      '| memory (PSS) | node MiB | Chromium MiB | total MiB | Chromium processes | temp folder KiB |',
      '|---|---:|---:|---:|---:|---:|',
      row('after 50 captures', memory.after50, memory.tempAfter50Bytes),
      row('after 250 captures', memory.after250, memory.tempAfter250Bytes),
      `| growth 50 -> 250 | | | ${memory.growthPercent.toFixed(1)} % | | ${(memory.tempGrowthBytes / 1024).toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

export function machineLine(results: BenchResults): string {
  const m = results.machine;
  return `${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}, ${m.chromium}, puppeteer-core ${m.puppeteerCore}; load average ${m.loadAverage.start} at start, ${m.loadAverage.end ?? '?'} at end`;
}
