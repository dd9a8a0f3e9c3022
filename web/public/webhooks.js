// The webhook secret: hidden until asked for, copied, rotated after a confirmation. Text only, never HTML strings.
import { callApi } from './api.js';
import { copyShown } from './clipboard.js';
import { SessionEnded } from './session.js';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * @typedef {{
 *   withSession: <T>(work: (token: string) => Promise<T>) => Promise<T>,
 *   confirmAction: (title: string, text: string, action: string) => Promise<boolean>,
 * }} WebhookPanelDeps
 */

/** @type {WebhookPanelDeps | null} */
let deps = null;

/** Wires the panel's buttons; the secret is fetched only when the user asks to see or copy it. */
export function initWebhookSecret(/** @type {WebhookPanelDeps} */ panelDeps) {
  deps = panelDeps;
  $('webhook-secret-reveal').addEventListener('click', toggle);
  $('webhook-secret-copy').addEventListener('click', copy);
  $('webhook-secret-rotate').addEventListener('click', rotate);
}

/** Forgets the secret the page holds (signing out). */
export function clearWebhookSecret() {
  show(null);
  $('webhook-secret-status').textContent = '';
  $('webhook-secret-error').textContent = '';
}

function shownSecret() {
  return $('webhook-secret-value').hidden ? null : $('webhook-secret-value').textContent;
}

/** Shows `secret`, or hides (and drops) the one shown. */
function show(/** @type {string | null} */ secret) {
  const value = $('webhook-secret-value');
  value.textContent = secret ?? '';
  value.hidden = secret === null;
  const reveal = $('webhook-secret-reveal');
  reveal.textContent = secret === null ? 'Reveal' : 'Hide';
  reveal.setAttribute('aria-expanded', String(secret !== null));
}

/** Runs one call of the panel, saying what went wrong in its own error line. */
async function attempt(work) {
  $('webhook-secret-error').textContent = '';
  try {
    return await work();
  } catch (error) {
    if (error instanceof SessionEnded) return null;
    $('webhook-secret-error').textContent = `The webhook secret could not be loaded: ${error.message}`;
    return null;
  }
}

const fetchSecret = () =>
  deps?.withSession((token) => callApi('/api/webhook-secret', { token })).then((body) => body.secret);

async function toggle() {
  if (shownSecret() !== null) {
    show(null);
    return;
  }
  const secret = await attempt(fetchSecret);
  if (secret) show(secret);
}

async function copy() {
  const secret = shownSecret() ?? (await attempt(fetchSecret));
  if (!secret) return;
  show(secret);
  $('webhook-secret-status').textContent = await copyShown($('webhook-secret-value'), 'Webhook secret');
}

async function rotate() {
  const ok = await deps?.confirmAction(
    'Rotate the webhook secret?',
    'A new secret signs every webhook from now on. For 24 hours deliveries are signed with the old secret too, ' +
      'so update your receivers within that time.',
    'Rotate secret',
  );
  if (!ok) return;
  const secret = await attempt(() =>
    deps?.withSession((token) => callApi('/api/webhook-secret/rotate', { method: 'POST', token })),
  ).then((body) => body?.secret);
  if (!secret) return;
  show(secret);
  $('webhook-secret-status').textContent =
    'Rotated. The previous secret keeps signing beside this one for 24 hours.';
}
