import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEgressGate } from '../../shared/egress/egressGate';
import { deliverWebhook, type WebhookMessage } from '../../shared/webhooks/deliverWebhook';
import { generateWebhookSecret } from '../../shared/webhooks/webhookSecrets';
import { unusedPort } from '../helpers/pageServer';

/**
 * The receiver the README shows, run as written (only its port changed), against real deliveries: what customers
 * copy must accept our signature and refuse anything else.
 */

const secret = generateWebhookSecret();
let receiver: ChildProcess;
let port: number;
let output = '';

beforeAll(async () => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Webhooks: verifying a delivery'));
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  if (!code?.includes('.listen(8080)')) throw new Error('The README receiver example was not found');
  port = await unusedPort();
  receiver = spawn(
    process.execPath,
    ['--input-type=module', '-e', code.replace('.listen(8080)', `.listen(${port}, '127.0.0.1')`)],
    {
      cwd: new URL('../..', import.meta.url),
      env: { PATH: process.env.PATH, WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  receiver.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  // Listening once it answers (an empty POST is refused: no signature).
  await vi.waitFor(
    async () => expect((await fetch(`http://127.0.0.1:${port}/`, { method: 'POST' })).status).toBe(400),
    { timeout: 15_000, interval: 100 },
  );
});
afterAll(async () => {
  if (receiver && receiver.exitCode === null) {
    receiver.kill();
    await once(receiver, 'exit');
  }
});

const event = (id: string): WebhookMessage => ({
  url: `http://127.0.0.1:${port}/hooks`,
  id,
  type: 'screenshot.succeeded',
  timestamp: Date.now(),
  data: { id: 'job_readme' },
});
const egress = () => createEgressGate({ allowPrivateHosts: `127.0.0.1:${port}` });

describe("the README's webhook receiver", () => {
  it('accepts a delivery signed with its secret, and reads the event', async () => {
    expect(await deliverWebhook(event('msg_readme_1'), [secret], { egress: egress() })).toEqual({
      delivered: true,
      status: 204,
    });
    await expect.poll(() => output).toContain('msg_readme_1 screenshot.succeeded job_readme');
  });

  it('accepts one signed with its secret and another during a rotation', async () => {
    const result = await deliverWebhook(event('msg_readme_2'), [generateWebhookSecret(), secret], {
      egress: egress(),
    });
    expect(result.delivered).toBe(true);
  });

  it('refuses a delivery signed with another secret', async () => {
    expect(
      await deliverWebhook(event('msg_readme_3'), [generateWebhookSecret()], { egress: egress() }),
    ).toEqual({
      delivered: false,
      status: 400,
      error: 'receiver answered 400',
    });
    expect(output).not.toContain('msg_readme_3');
  });
});
