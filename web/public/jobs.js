// The jobs view: the account's latest async captures (GET /api/jobs), their status, a link to each result and what
// became of the webhook. Text only, never HTML strings; result links are the API's own pre-signed addresses.

import { h } from './dom.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const dates = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

const STATUS_LABELS = { queued: 'Queued', running: 'Running', succeeded: 'Succeeded', failed: 'Failed' };

/** A link to a job's result, only for an http(s) address (the pre-signed URL), opened without our origin. */
function resultCell(job) {
  if (job.result) {
    const url = String(job.result.url);
    if (!/^https?:\/\//i.test(url)) return 'Stored';
    return h(
      'a',
      { href: url, target: '_blank', rel: 'noopener noreferrer' },
      `Result (${job.result.contentType})`,
    );
  }
  if (job.error) return `${job.error.status}: ${job.error.message}`;
  return '–';
}

function webhookCell(job) {
  if (!job.webhook) return '–';
  const { status, attempts, lastStatus } = job.webhook;
  const tries = `${attempts} attempt${attempts === 1 ? '' : 's'}`;
  return `${status[0].toUpperCase()}${status.slice(1)} (${tries}${lastStatus === null ? '' : `, last ${lastStatus}`})`;
}

/**
 * Shows the latest jobs.
 * @param {{ jobs: { id: string, status: string, createdAt: number, result: any, error: any, webhook: any }[] }} list
 */
export function showJobs(list) {
  $('jobs-table').hidden = list.jobs.length === 0;
  $('no-jobs').hidden = list.jobs.length !== 0;
  const rows = list.jobs.map((job) =>
    h(
      'tr',
      { dataset: { jobId: job.id, status: job.status } },
      h('td', { dataset: { label: 'Job' } }, h('code', {}, job.id)),
      h(
        'td',
        { dataset: { label: 'Status' } },
        h('span', { className: `badge ${job.status}` }, STATUS_LABELS[job.status] ?? job.status),
      ),
      h(
        'td',
        { dataset: { label: 'Created' } },
        h('time', { dateTime: new Date(job.createdAt).toISOString() }, dates.format(job.createdAt)),
      ),
      h('td', { dataset: { label: 'Result' } }, resultCell(job)),
      h('td', { dataset: { label: 'Webhook' } }, webhookCell(job)),
    ),
  );
  $('jobs-body').replaceChildren(...rows);
}

/** Forgets the shown jobs (signing out). */
export function clearJobs() {
  $('jobs-body').replaceChildren();
  $('jobs-table').hidden = true;
  $('no-jobs').hidden = true;
}
