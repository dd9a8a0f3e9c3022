import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { FiltersEngine, Request, type RequestType } from '@ghostery/adblocker';
import { extractFeaturesFromDOM } from '@ghostery/adblocker-content';
import type { CDPSession, Frame, Page, Protocol } from 'puppeteer-core';
import { getDomain } from 'tldts-experimental';

/**
 * `blockAds`: Ghostery's filter engine, compiled from the filter lists that ship with the project
 * (shared/capture/filters/, rebuilt by `npm run filters:update`). Network filters abort matching requests before
 * they leave the browser; cosmetic filters hide matching elements in every frame, applied once the page has loaded
 * and before the capture, so the image never races the hiding.
 */

/** Where the serialized engine and its manifest live: beside this module, and beside the Lambda bundle. */
export const FILTER_DIR = fileURLToPath(new URL('./filters/', import.meta.url));
/** Gzipped: half the size in the function bundle, which shares Lambda's 250 MiB with the browser layer. */
export const ENGINE_FILE = 'engine.bin.gz';
export const MANIFEST_FILE = 'lists.json';

let engine: Promise<FiltersEngine> | undefined;

/**
 * The engine, read, unzipped and deserialized once per warm process (about 150 ms), on the first capture that asks.
 */
export function filterEngine(): Promise<FiltersEngine> {
  engine ??= readFile(`${FILTER_DIR}${ENGINE_FILE}`).then((zipped) =>
    FiltersEngine.deserialize(new Uint8Array(gunzipSync(zipped))),
  );
  engine.catch(() => {
    engine = undefined;
  });
  return engine;
}

/**
 * Network blocking for a fresh page, before it navigates: every request of the page and its frames is paused, asked
 * of the engine, and failed or let go. Through a CDP session of our own rather than puppeteer's request interception,
 * which pairs each pause with its network event and a frame before anyone may answer: a few ms a capture. The top
 * frame's own document is never blocked (the customer asked for that page); a frame's document is matched as a
 * subdocument, which puppeteer could not tell apart. Frames share the page's target (@sparticuz/chromium runs
 * without site isolation), so this session sees their requests too. A page prepared ahead of a capture gets it then,
 * off the request path.
 */
export async function startAdBlocking(page: Page): Promise<AdBlocking> {
  const [blocker, session] = await Promise.all([filterEngine(), page.createCDPSession()]);
  let topFrameId: string | undefined;
  /** Frames whose document was refused: their elements are collapsed after load. */
  const blockedFrames = new Set<string>();
  session.on('Fetch.requestPaused', (event) => {
    const { requestId } = event;
    const blocked = isBlocked(blocker, event, topFrameId, page.url());
    if (blocked && event.resourceType === 'Document') blockedFrames.add(event.frameId);
    const verdict = blocked
      ? session.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' })
      : session.send('Fetch.continueRequest', { requestId });
    // The page may close while a request waits: nothing is left to answer then.
    verdict.catch(() => undefined);
  });
  const [{ frameTree }] = await Promise.all([
    session.send('Page.getFrameTree'),
    session.send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }] }),
  ]);
  topFrameId = frameTree.frame.id;
  return {
    // Leaving the session ends its interception.
    stop: () => session.detach(),
    collapseBlockedFrames: async () => {
      await Promise.all(
        [...blockedFrames].map((frameId) => collapseFrame(session, frameId).catch(() => undefined)),
      );
    },
  };
}

/** A page's network blocking, on. */
export interface AdBlocking {
  /** Switches it off (a page prepared with it, for a capture that does not want it). */
  stop(): Promise<void>;
  /**
   * Hides the element of each frame whose document was refused, as ad blockers in browsers do: an empty box the
   * size of the ad would be left otherwise.
   */
  collapseBlockedFrames(): Promise<void>;
}

/**
 * Before navigation: network blocking on the page or not, as `wanted`, for a page prepared with it (`running`) or
 * not. Answers the page's blocking when it is on.
 */
export async function setAdBlocking(
  page: Page,
  wanted: boolean,
  running: AdBlocking | undefined,
): Promise<AdBlocking | undefined> {
  if (!wanted) {
    await running?.stop();
    return undefined;
  }
  return running ?? (await startAdBlocking(page));
}

/** The <iframe> (or <frame>, <object>) element that holds a frame, hidden. Gone already (removed by the page): nothing to do. */
async function collapseFrame(session: CDPSession, frameId: string): Promise<void> {
  const { backendNodeId } = await session.send('DOM.getFrameOwner', { frameId });
  const { object } = await session.send('DOM.resolveNode', { backendNodeId });
  if (!object.objectId) return;
  await session.send('Runtime.callFunctionOn', {
    objectId: object.objectId,
    functionDeclaration: "function () { this.style.setProperty('display', 'none', 'important'); }",
  });
}

function isBlocked(
  blocker: FiltersEngine,
  event: Protocol.Fetch.RequestPausedEvent,
  topFrameId: string | undefined,
  pageUrl: string,
): boolean {
  const isDocument = event.resourceType === 'Document';
  if (isDocument && event.frameId === topFrameId) return false;
  const request = Request.fromRawDetails({
    url: event.request.url,
    sourceUrl: pageUrl,
    type: isDocument ? 'sub_frame' : (event.resourceType.toLowerCase() as RequestType),
  });
  return blocker.match(request).match;
}

/**
 * After load: cosmetic filtering of every frame (the lists' rules for its host and for what its DOM holds), and the
 * frames whose document was refused collapsed.
 */
export async function hideAds(page: Page, blocking: AdBlocking | undefined): Promise<void> {
  const blocker = await filterEngine();
  await Promise.all([
    ...page.frames().map((frame) => hideAdsInFrame(blocker, frame).catch(() => undefined)),
    blocking?.collapseBlockedFrames(),
  ]);
}

async function hideAdsInFrame(blocker: FiltersEngine, frame: Frame): Promise<void> {
  const url = frame.url();
  if (!/^https?:/.test(url) || frame.detached) return;
  const hostname = new URL(url).hostname;
  const features = await frame.evaluate(extractFeaturesFromDOM);
  const { active, styles } = blocker.getCosmeticsFilters({
    url,
    hostname,
    domain: getDomain(hostname) ?? '',
    ...features,
    getBaseRules: true,
    getRulesFromHostname: true,
    getRulesFromDOM: true,
    // Scriptlets would run the lists' code in the page; extended selectors need the engine's own script.
    getInjectionRules: false,
    getExtendedRules: false,
  });
  if (!active || styles === '') return;
  // Adopted, not a <style> element: a page's Content-Security-Policy does not refuse it.
  await frame.evaluate((css: string) => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  }, styles);
}
