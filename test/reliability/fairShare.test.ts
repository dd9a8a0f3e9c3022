import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InvokedRenderer } from '../../shared/capture/invokedRenderer';
import { startTestLocalService, type TestLocalService } from '../helpers/localService';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import { HEADROOM_RENDERER, ReservedLambda, SHARED_RENDERER } from '../helpers/reservedLambda';
import { startScreenshotHarness } from '../helpers/screenshotHarness';

/**
 * Fair sharing with real Chromium. Through the local server: captures that are sure to fail, from other accounts,
 * hold every place the local server shares (LOCAL_MAX_CAPTURES, Lambda's concurrency played locally), and another
 * account's capture still runs at its normal speed; times are compared as a ratio measured in the same test, so a
 * loaded machine slows both sides alike. Through the deployed handler: the capacity is the renderers' reserved
 * concurrency, the shared renderer first and the headroom renderer for newcomers.
 */

/** The victim's page waits on an image the server holds this long, so its time is mostly waiting, not CPU. */
const IMAGE_HOLD_MS = 800;

let pages: PageServer;
let service: TestLocalService | undefined;

beforeAll(async () => {
  pages = await startPageServer({
    '/victim': solidPage('#00ff00', '', '<img src="/held.png">'),
    '/held.png': (_, res) => {
      setTimeout(() => res.writeHead(404).end(), IMAGE_HOLD_MS);
    },
    '/never': solidPage('#ff0000'),
    '/spin': solidPage('#0000ff'),
  });
  service = await startTestLocalService({
    ALLOW_PRIVATE_HOSTS: pages.hostPort,
    FREE_CREDITS: '100',
    LOCAL_MAX_CAPTURES: '4',
    LOCAL_MAX_QUEUED: '64',
  });
});

afterAll(async () => {
  await service?.close();
  await pages?.close();
});

const shot = { width: 320, height: 320 };

async function screenshot(apiKey: string, body: unknown): Promise<number> {
  const response = await (service as TestLocalService).request('/api/screenshot', { bearer: apiKey, body });
  await response.arrayBuffer();
  return response.status;
}

/** Milliseconds one victim capture takes, end to end; it must succeed. */
async function timedCapture(apiKey: string): Promise<number> {
  const started = performance.now();
  expect(await screenshot(apiKey, { url: `${pages.origin}/victim`, ...shot })).toBe(200);
  return performance.now() - started;
}

async function medianOfThree(apiKey: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) times.push(await timedCapture(apiKey));
  return times.sort((a, b) => a - b)[1] as number;
}

describe('four captures that are sure to fail, from other accounts, on every local capture place', () => {
  it("leave another account's capture within twice its normal time, and their own async captures accepted at once", async () => {
    const local = service as TestLocalService;
    const victim = await local.newAccount();
    await timedCapture(victim.apiKey); // the first capture warms the browser
    const normal = await medianOfThree(victim.apiKey);

    const attackers = await Promise.all(Array.from({ length: 4 }, () => local.newAccount()));
    const seen = pages.hits.length;
    let attacksSettled = 0;
    const attacks = attackers.map((attacker, i) =>
      screenshot(
        attacker.apiKey,
        i === 0
          ? { url: `${pages.origin}/spin`, js: 'while(true){}', ...shot }
          : { url: `${pages.origin}/never`, waitForSelector: '#never-there', ...shot },
      )
        .catch(() => 0) // the service closes under them at the end
        .finally(() => attacksSettled++),
    );
    // Every attack has loaded its page and holds its place (and the endless script has started).
    while (pages.hits.slice(seen).filter((path) => path === '/never' || path === '/spin').length < 4) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 500));

    const underAttack = await medianOfThree(victim.apiKey);
    // An async capture is only accepted, and its job runs from the job queue: it waits for no capture place, even
    // from an account that holds one (red team: waiting, its Idempotency-Key outlived "being accepted" and a retry
    // was accepted and charged again).
    const acceptAsync = async () => {
      const response = await fetch(`${local.url}/api/screenshot`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${attackers[1]?.apiKey}`,
          'Content-Type': 'application/json',
          'Idempotency-Key': 'order-1',
        },
        body: JSON.stringify({ url: `${pages.origin}/victim`, async: true, ...shot }),
      });
      return { status: response.status, id: (await response.json()).id as string };
    };
    const accepted = await acceptAsync();
    expect(accepted.status).toBe(202);
    expect(await acceptAsync()).toEqual(accepted);
    // The attacks were still holding their places the whole time.
    expect(attacksSettled).toBe(0);
    expect(underAttack).toBeLessThanOrEqual(2 * normal);
    await service?.close();
    service = undefined;
    await Promise.all(attacks);
  });
});

describe('the deployed handler over renderers that Lambda throttles (2 shared, 1 headroom)', () => {
  it('refuses an account beyond the shared part at once, and lets a newcomer in on the headroom, only one', async () => {
    let lambda: ReservedLambda | undefined;
    const harness = await startScreenshotHarness(
      { ALLOW_PRIVATE_HOSTS: pages.hostPort },
      {
        budgets: { navigationMs: 3_000, afterLoadMs: 3_000 },
        renderer: (local) => {
          lambda = new ReservedLambda({ [SHARED_RENDERER]: 2, [HEADROOM_RENDERER]: 1 }, local);
          return new InvokedRenderer(lambda.client, SHARED_RENDERER, HEADROOM_RENDERER);
        },
      },
    );
    try {
      const [attacker, victim, late, warm] = await Promise.all([
        harness.newAccount(),
        harness.newAccount(),
        harness.newAccount(),
        harness.newAccount(),
      ]);
      // The renderer process and its browser started before the short budgets below start counting.
      expect((await harness.shoot(warm.apiKey, { url: `${pages.origin}/victim`, ...shot })).status).toBe(200);
      const seen = pages.hits.length;
      const hitsOf = (path: string) => pages.hits.slice(seen).filter((hit) => hit === path).length;
      const until = (done: () => boolean) => vi.waitFor(() => expect(done()).toBe(true), { timeout: 20_000 });
      const never = { url: `${pages.origin}/never`, waitForSelector: '#never-there', ...shot };
      const attacks = [harness.shoot(attacker.apiKey, never), harness.shoot(attacker.apiKey, never)];
      await until(() => hitsOf('/never') === 2);
      // The shared part is full and the attacker holds slots: refused at once, no browser work.
      expect((await harness.shoot(attacker.apiKey, never)).status).toBe(429);
      const victimShot = harness.shoot(victim.apiKey, { url: `${pages.origin}/victim`, ...shot });
      await until(() => hitsOf('/victim') === 1);
      // The headroom is taken by the victim: a third account is refused until a place frees.
      const refused = await harness.shoot(late.apiKey, { url: `${pages.origin}/victim`, ...shot });
      expect(refused.status).toBe(429);
      expect(await harness.credits.balance(late.accountId)).toBe(100);
      expect(lambda?.invocations.filter((call) => call.throttled).map((call) => call.functionName)).toEqual([
        SHARED_RENDERER,
        SHARED_RENDERER,
        SHARED_RENDERER,
        HEADROOM_RENDERER,
      ]);
      expect((await victimShot).status).toBe(200);
      expect((await Promise.all(attacks)).map((answer) => answer.status)).toEqual([500, 500]);
      expect(await harness.credits.balance(attacker.accountId)).toBe(100);
    } finally {
      await harness.close();
    }
  });
});
