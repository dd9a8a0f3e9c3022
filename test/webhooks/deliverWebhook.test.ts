import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createEgressGate } from '../../shared/egress/egressGate';
import { ownPorts } from '../../shared/egress/ownPorts';
import { createUrlPolicy } from '../../shared/egress/urlPolicy';
import { deliverWebhook, type WebhookMessage } from '../../shared/webhooks/deliverWebhook';
import { generateWebhookSecret } from '../../shared/webhooks/webhookSecrets';
import { scriptedLookup } from '../helpers/egressFixtures';
import { logged } from '../helpers/logs';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhookReceiver';

/**
 * One delivery attempt against receivers this test runs on 127.0.0.1. Names are resolved by a scripted DNS, so a
 * name can resolve publicly at submission and privately at delivery (rebinding) without any real DNS.
 */

const receivers: WebhookReceiver[] = [];
async function receiver(...args: Parameters<typeof startWebhookReceiver>): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver(...args);
  receivers.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

const secret = generateWebhookSecret();

function message(url: string, data: unknown = { id: 'job_1', status: 'succeeded' }): WebhookMessage {
  return { url, id: 'msg_2f1c', type: 'screenshot.succeeded', timestamp: 1_764_000_000_123, data };
}

/** The egress rules as deployed (nothing private) or as a local run sets them, with `hook.example` scripted. */
function egress(allowPrivateHosts: string, answers: Record<string, string[][]> = {}) {
  return createEgressGate({ allowPrivateHosts, lookup: scriptedLookup(answers).lookup });
}

describe('deliverWebhook signatures', () => {
  it('signs so that the standardwebhooks verifier accepts the body as received', async () => {
    const hook = await receiver();
    const result = await deliverWebhook(message(`${hook.origin}/hooks`), [secret], {
      egress: egress(hook.hostPort),
    });
    expect(result).toEqual({ delivered: true, status: 204 });
    const [got] = hook.received;
    if (!got) throw new Error('nothing received');
    expect(got.method).toBe('POST');
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['webhook-id']).toBe('msg_2f1c');
    expect(new Webhook(secret).verify(got.body, got.headers)).toEqual({
      type: 'screenshot.succeeded',
      timestamp: 1_764_000_000_123,
      data: { id: 'job_1', status: 'succeeded' },
    });
  });

  it('sends the timestamp header in seconds of the attempt, the body timestamp in ms of the event', async () => {
    const hook = await receiver();
    const sentAt = Date.now();
    await deliverWebhook(message(hook.origin), [secret], {
      egress: egress(hook.hostPort),
      now: () => sentAt,
    });
    const got = hook.received[0];
    expect(got?.headers['webhook-timestamp']).toBe(String(Math.floor(sentAt / 1000)));
    expect(JSON.parse(got?.body ?? '{}').timestamp).toBe(1_764_000_000_123);
  });

  it('gives a signature the verifier rejects once the body is tampered with', async () => {
    const hook = await receiver();
    await deliverWebhook(message(hook.origin), [secret], { egress: egress(hook.hostPort) });
    const got = hook.received[0];
    if (!got) throw new Error('nothing received');
    const tampered = got.body.replace('succeeded', 'failed');
    expect(tampered).not.toBe(got.body);
    expect(() => new Webhook(secret).verify(tampered, got.headers)).toThrow(/No matching signature/);
    expect(() => new Webhook(generateWebhookSecret()).verify(got.body, got.headers)).toThrow();
  });

  it('signs with every secret given, so receivers with either secret verify during a rotation', async () => {
    const hook = await receiver();
    const previous = generateWebhookSecret();
    await deliverWebhook(message(hook.origin), [secret, previous], { egress: egress(hook.hostPort) });
    const got = hook.received[0];
    if (!got) throw new Error('nothing received');
    expect(got.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(() => new Webhook(secret).verify(got.body, got.headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(got.body, got.headers)).not.toThrow();
  });
});

describe('deliverWebhook outcomes', () => {
  it('counts a non-2xx answer as not delivered, with its status', async () => {
    const hook = await receiver((_request, response) => response.writeHead(500).end('nope'));
    expect(await deliverWebhook(message(hook.origin), [secret], { egress: egress(hook.hostPort) })).toEqual({
      delivered: false,
      status: 500,
      error: 'receiver answered 500',
    });
  });

  it('does not follow a redirect: a 302 is not delivered and its target gets nothing', async () => {
    const target = await receiver();
    const hook = await receiver((_request, response) =>
      response.writeHead(302, { Location: `${target.origin}/elsewhere` }).end(),
    );
    const result = await deliverWebhook(message(hook.origin), [secret], {
      egress: egress(`${hook.hostPort},${target.hostPort}`),
    });
    expect(result).toMatchObject({ delivered: false, status: 302 });
    expect(hook.received).toHaveLength(1);
    expect(target.connections).toBe(0);
  });

  it('cuts a receiver that does not answer in time', async () => {
    const hook = await receiver(() => {
      // Never answers.
    });
    const result = await deliverWebhook(message(hook.origin), [secret], {
      egress: egress(hook.hostPort),
      timeoutMs: 300,
    });
    expect(result).toEqual({ delivered: false, status: null, error: 'receiver did not answer in time' });
    expect(hook.received).toHaveLength(1);
  });

  it('reads no more than a small part of a large answer', async () => {
    const hook = await receiver((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/plain' });
      response.end('x'.repeat(8 * 1024 * 1024));
    });
    const result = await deliverWebhook(message(hook.origin), [secret], { egress: egress(hook.hostPort) });
    expect(result).toEqual({ delivered: true, status: 200 });
  });

  it('refuses a URL that is not http or https without connecting anywhere', async () => {
    const result = await deliverWebhook(message('ftp://hook.example/'), [secret], { egress: egress('*') });
    expect(result).toMatchObject({ delivered: false, status: null });
  });
});

describe('deliverWebhook egress rules at delivery', () => {
  it('connects to the address it checked, not to one resolved again', async () => {
    const hook = await receiver();
    // hook.example exists only in the scripted DNS: a second, real resolution would fail.
    const result = await deliverWebhook(message(`http://hook.example:${hook.port}/in`), [secret], {
      egress: egress(`hook.example:${hook.port}`, { 'hook.example': [['127.0.0.1']] }),
    });
    expect(result.delivered).toBe(true);
    expect(hook.received[0]?.headers.host).toBe(`hook.example:${hook.port}`);
  });

  it('refuses a host that resolved public at submission and private at delivery, connecting to nothing', async () => {
    const hook = await receiver();
    const url = `http://rebind.example:${hook.port}/in`;
    const dns = scriptedLookup({ 'rebind.example': [['93.184.215.14'], ['127.0.0.1']] });
    await expect(
      createUrlPolicy({ allowPrivateHosts: '', lookup: dns.lookup }).assertAllowed(url),
    ).resolves.toBeUndefined();
    const result = await deliverWebhook(message(url), [secret], {
      egress: createEgressGate({ allowPrivateHosts: '', lookup: dns.lookup }),
    });
    expect(result).toMatchObject({ delivered: false, status: null });
    expect(result.error).toMatch(/private or reserved address \(127\.0\.0\.1/);
    expect(dns.calls).toEqual(['rebind.example', 'rebind.example']);
    expect(hook.connections).toBe(0);
  });

  it('refuses a private address literal without ALLOW_PRIVATE_HOSTS', async () => {
    const hook = await receiver();
    const result = await deliverWebhook(message(hook.origin), [secret], { egress: egress('') });
    expect(result.delivered).toBe(false);
    expect(hook.connections).toBe(0);
  });

  it("refuses the service's own ports even when every private host is allowed", async () => {
    const hook = await receiver();
    const leave = ownPorts.add(hook.port);
    try {
      const result = await deliverWebhook(message(hook.origin), [secret], { egress: egress('*') });
      expect(result.delivered).toBe(false);
      expect(result.error).toMatch(/port of the service itself/);
    } finally {
      leave();
    }
    expect(hook.connections).toBe(0);
  });
});

describe('deliverWebhook over https', () => {
  it('names the URL host to TLS at the pinned address, and refuses a certificate nobody vouches for', async () => {
    const fixture = (name: string) => readFile(new URL(`./fixtures/${name}`, import.meta.url));
    const names: string[] = [];
    let requests = 0;
    const server = createHttpsServer(
      {
        cert: await fixture('hook.example.crt'),
        key: await fixture('hook.example.key'),
        SNICallback: (servername, done) => {
          names.push(servername);
          done(null);
        },
      },
      (_request, response) => {
        requests += 1;
        response.writeHead(204).end();
      },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      const result = await deliverWebhook(message(`https://hook.example:${port}/in`), [secret], {
        egress: egress(`hook.example:${port}`, { 'hook.example': [['127.0.0.1']] }),
      });
      expect(result).toEqual({
        delivered: false,
        status: null,
        error: 'request failed (DEPTH_ZERO_SELF_SIGNED_CERT)',
      });
      expect(names).toEqual(['hook.example']);
      expect(requests).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('deliverWebhook logs', () => {
  it('name the host only: never the path, query, credentials or a secret', async () => {
    const hook = await receiver((_request, response) => response.writeHead(503).end());
    const ok = await receiver();
    const output = await logged(async () => {
      await deliverWebhook(
        message(`http://alice:hunter2@${hook.hostPort}/private-path?token=tok-4711`),
        [secret],
        {
          egress: egress(hook.hostPort),
        },
      );
      await deliverWebhook(message(`${ok.origin}/private-path?token=tok-4711`), [secret], {
        egress: egress(ok.hostPort),
      });
    });
    expect(output).toContain('Webhook not delivered');
    expect(output).toContain('Webhook delivered');
    expect(output).toContain(hook.hostPort);
    for (const hidden of ['alice', 'hunter2', 'tok-4711', 'private-path', secret, secret.slice(6)]) {
      expect(output).not.toContain(hidden);
    }
  });
});
