// The usage history: captures and credits per UTC day as a chart (uPlot, served beside this file), the same figures
// as a table, and the totals per API key. Text only, never HTML strings.
import './locale.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const numbers = new Intl.NumberFormat();
const DAY_MS = 86_400_000;
const CHART_HEIGHT = 220;
/** Ticks of the time axis fall on whole days (in seconds, as uPlot counts time): a wide chart put them every 12 hours. */
const DAY_STEPS = [1, 2, 7, 14, 28, 56].map((days) => (days * DAY_MS) / 1000);
/** Whole-number steps for the counts axis: there is no such thing as half a capture. */
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];

/** @type {Promise<any> | null} uPlot, loaded on first use; a page whose chart cannot load still shows the figures. */
let chartLibrary = null;
/** @type {any} */
let chart = null;
/** @type {ResizeObserver | null} */
let resizing = null;

/** The API path for the last `days` UTC days, today included. */
export function usagePath(days) {
  const now = Date.now();
  const today = now - (now % DAY_MS);
  return `/api/usage?from=${today - (days - 1) * DAY_MS}&to=${now}`;
}

const plural = (count, one, many) => `${numbers.format(count)} ${count === 1 ? one : many}`;

/**
 * Shows a usage report (GET /api/usage).
 * @param {{ days: { date: string, captures: number, failed: number, cacheHits: number, credits: number }[],
 *   byKey: { keyId: string, name: string | null, captures: number, credits: number }[] }} report
 * @param {string} period what the window is called, e.g. "Last 30 days"
 */
export async function showUsage(report, period) {
  const total = (field) => report.days.reduce((sum, day) => sum + day[field], 0);
  const summary = [
    plural(total('captures'), 'capture', 'captures'),
    plural(total('failed'), 'failed request', 'failed requests'),
    plural(total('credits'), 'credit', 'credits'),
  ];
  $('usage-summary').textContent = `${period}: ${summary.join(', ')}.`;
  $('usage-summary').dataset.captures = String(total('captures'));
  $('usage-summary').dataset.credits = String(total('credits'));
  renderDays(report.days);
  renderKeys(report.byKey);
  chartLibrary ??= import('./uplot.js').then((module) => module.default);
  try {
    drawChart(await chartLibrary, report.days);
  } catch (error) {
    chartLibrary = null; // The next refresh tries again.
    throw new Error(`the chart could not be drawn (${error.message}); the figures are in the table`);
  }
}

/** Forgets the shown report (signing out). */
export function clearUsage() {
  resizing?.disconnect();
  resizing = null;
  chart?.destroy();
  chart = null;
  $('usage-figure').hidden = true;
  $('usage-summary').textContent = '';
  $('usage-readout').textContent = '';
  $('usage-days').replaceChildren();
  $('usage-keys').replaceChildren();
  $('usage-keys-table').hidden = true;
  $('usage-no-keys').hidden = true;
}

/** The day under the cursor, or the latest day, in words. */
function describeDay(days, index) {
  const day = days[index ?? days.length - 1];
  if (!day) return '';
  return `${day.date}: ${plural(day.captures, 'capture', 'captures')}, ${plural(day.credits, 'credit', 'credits')}`;
}

function drawChart(uPlot, days) {
  $('usage-figure').hidden = false;
  const container = $('usage-chart');
  const style = getComputedStyle(document.documentElement);
  const color = (name) => style.getPropertyValue(name).trim();
  const axis = {
    stroke: color('--muted'),
    grid: { stroke: color('--line'), width: 1 },
    ticks: { stroke: color('--line'), width: 1 },
  };
  const data = [
    days.map((day) => Date.parse(`${day.date}T00:00:00Z`) / 1000),
    days.map((day) => day.captures),
    days.map((day) => day.credits),
  ];
  chart?.destroy();
  chart = new uPlot(
    {
      width: Math.max(container.clientWidth, 200),
      height: CHART_HEIGHT,
      // Days are UTC days (docs/api.md): label them so, wherever the browser is.
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
      legend: { show: false },
      cursor: { y: false, drag: { x: false, y: false } },
      scales: {
        // Half a day either side, so the first and last days' bars are whole.
        x: { time: true, range: (_u, min, max) => [min - DAY_MS / 2000, max + DAY_MS / 2000] },
        y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
      },
      axes: [
        { ...axis, incrs: DAY_STEPS },
        { ...axis, incrs: WHOLE_STEPS, size: 48 },
      ],
      series: [
        {},
        {
          label: 'Captures',
          stroke: color('--chart-captures'),
          fill: color('--chart-captures'),
          paths: uPlot.paths.bars({ size: [0.6, 24] }),
          points: { show: false },
        },
        { label: 'Credits', stroke: color('--chart-credits'), width: 2, points: { show: true, size: 6 } },
      ],
      hooks: {
        setCursor: [(u) => ($('usage-readout').textContent = describeDay(days, u.cursor.idx))],
      },
    },
    data,
    container,
  );
  $('usage-readout').textContent = describeDay(days);
  resizing?.disconnect();
  resizing = new ResizeObserver(() => {
    if (chart && container.clientWidth > 0)
      chart.setSize({ width: container.clientWidth, height: CHART_HEIGHT });
  });
  resizing.observe(container);
}

function cells(row, values) {
  for (const [label, value] of values) {
    const cell = row.insertCell();
    cell.dataset.label = label;
    cell.textContent = value;
  }
}

function renderDays(days) {
  const rows = [...days].reverse().map((day) => {
    const row = document.createElement('tr');
    cells(row, [
      ['Date', day.date],
      ['Captures', numbers.format(day.captures)],
      ['Failed', numbers.format(day.failed)],
      ['Cache hits', numbers.format(day.cacheHits)],
      ['Credits', numbers.format(day.credits)],
    ]);
    return row;
  });
  $('usage-days').replaceChildren(...rows);
}

function renderKeys(byKey) {
  $('usage-keys-table').hidden = byKey.length === 0;
  $('usage-no-keys').hidden = byKey.length !== 0;
  const rows = byKey.map((key) => {
    const row = document.createElement('tr');
    row.dataset.keyId = key.keyId;
    cells(row, [
      ['Key', key.name ?? `Deleted key (${key.keyId})`],
      ['Captures', numbers.format(key.captures)],
      ['Credits', numbers.format(key.credits)],
    ]);
    row.cells[0]?.classList.add('name');
    return row;
  });
  $('usage-keys').replaceChildren(...rows);
}
