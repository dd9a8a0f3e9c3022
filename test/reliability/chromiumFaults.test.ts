import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeEvent } from '../../local/apiGatewayEvent';
import { onlyBrowserPid, rendererPids } from '../helpers/chromiumProcesses';
import { neverLoadingPage, type PageServer, solidPage, startPageServer } from '../helpers/pageServer';
import {
  type ScreenshotHarness,
  type StreamedResponse,
  startScreenshotHarness,
} from '../helpers/screenshotHarness';

let pages: PageServer;
let harness: ScreenshotHarness;
let account: Awaited<ReturnType<ScreenshotHarness['newAccount']>>;

beforeAll(async () => {
  pages = await startPageServer({
    '/red': solidPage('#ff0000'),
    '/never-loads': neverLoadingPage,
    // Grows the JavaScript heap until V8 gives up and the renderer dies.
    '/allocates': solidPage(
      '#ff0000',
      '<script>const kept=[];for(;;)kept.push(new Array(1e6).fill(Math.random()))</script>',
    ),
  });
  harness = await startScreenshotHarness({ ALLOW_PRIVATE_HOSTS: pages.hostPort });
  account = await harness.newAccount();
  // The browser is up and warm before any fault is injected.
  expect((await shoot('/red')).status).toBe(200);
});

afterAll(async () => {
  await harness?.close();
  await pages?.close();
});

const url = (path: string) => `${pages.origin}${path}`;
const balance = () => harness.credits.balance(account.accountId);

/** A small capture through the real handler, with the Lambda deadline `functionTimeoutMs` from now. */
function shoot(path: string, functionTimeoutMs?: number): Promise<StreamedResponse> {
  const event = routeEvent('screenshot', {
    bearer: account.apiKey,
    body: { url: url(path), width: 320, height: 320 },
  });
  return harness.invoke(event, functionTimeoutMs);
}

/** Resolves once the page server has been asked for `path` at least `times` times (the browser is on the page). */
async function requested(path: string, times: number): Promise<void> {
  while (pages.hits.filter((hit) => hit === path).length < times)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

const hitsOf = (path: string) => pages.hits.filter((hit) => hit === path).length;

function expectCaptureFailure(response: StreamedResponse, path: string, reason: RegExp): void {
  expect(response.status).toBe(500);
  expect(response.json()).toEqual({
    error: expect.any(String),
    url: url(path),
    message: expect.stringMatching(reason),
  });
}

describe('a browser that is killed', () => {
  it('fails the capture in flight with 500, url and message, and gives its credits back', async () => {
    const before = await balance();
    const pid = await onlyBrowserPid();
    const seen = hitsOf('/never-loads');
    const inFlight = shoot('/never-loads');
    await requested('/never-loads', seen + 1);
    process.kill(pid, 'SIGKILL');

    expectCaptureFailure(await inFlight, '/never-loads', /browser stopped/i);
    expect(await balance()).toBe(before);
  });

  it('is replaced by a new browser for the next capture', async () => {
    const pid = await onlyBrowserPid();
    const seen = hitsOf('/never-loads');
    const inFlight = shoot('/never-loads');
    await requested('/never-loads', seen + 1);
    process.kill(pid, 'SIGKILL');
    expect((await inFlight).status).toBe(500);

    expect((await shoot('/red')).status).toBe(200);
    expect(await onlyBrowserPid()).not.toBe(pid);
  });

  it('is replaced even when it died between requests', async () => {
    const pid = await onlyBrowserPid();
    process.kill(pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await shoot('/red')).status).toBe(200);
    expect(await onlyBrowserPid()).not.toBe(pid);
  });
});

describe('a page that never finishes loading', () => {
  it('is cut off with a 500 before the function deadline, and its credits come back', async () => {
    const before = await balance();
    const functionTimeoutMs = 6_000;
    const started = performance.now();
    const response = await shoot('/never-loads', functionTimeoutMs);
    const elapsed = performance.now() - started;

    // Whatever is left before the deadline's reserve, when less than the navigation budget: 3 s, or a little under
    // it on a loaded machine (admission is part of the function's time).
    expectCaptureFailure(response, '/never-loads', /did not load within (3|2\.\d) s/);
    // The handler keeps a reserve to refund and answer; past the deadline Lambda would kill it mid-way.
    expect(elapsed).toBeLessThan(functionTimeoutMs);
    expect(await balance()).toBe(before);
  });

  it('leaves the browser able to capture the next page', async () => {
    expect((await shoot('/red')).status).toBe(200);
  });
});

describe('a page whose renderer dies', () => {
  it('answers 500 when the renderer process is killed under it, and gives the credits back', async () => {
    const before = await balance();
    const browser = await onlyBrowserPid();
    const seen = hitsOf('/never-loads');
    const inFlight = shoot('/never-loads');
    await requested('/never-loads', seen + 1);
    // As the kernel's OOM killer would: the browser survives, the page's renderer does not.
    for (const pid of await rendererPids(browser)) process.kill(pid, 'SIGKILL');

    expectCaptureFailure(await inFlight, '/never-loads', /crashed/i);
    expect(await balance()).toBe(before);
    expect(await onlyBrowserPid()).toBe(browser);
  });

  it('answers 500 when the page allocates until it runs out of memory, and gives the credits back', async () => {
    const before = await balance();
    // The renderer's heap cap ends the page well within this budget (about 17 s: filling 512 MB takes a second or
    // two, several on a loaded machine); without it, V8 would grow to its 4 GB default (more than the Lambda has)
    // and the capture would only end at the time limit.
    const response = await shoot('/allocates', 20_000);
    expectCaptureFailure(response, '/allocates', /crashed/i);
    expect(await balance()).toBe(before);
  });

  it('leaves the browser able to capture the next page', async () => {
    expect((await shoot('/red')).status).toBe(200);
  });
});
