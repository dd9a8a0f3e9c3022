import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { FiltersEngine, Request, type RequestType } from '@ghostery/adblocker';
import { extractFeaturesFromDOM } from '@ghostery/adblocker-content';
import type { CDPSession, Frame, Page, Protocol } from 'puppeteer-core';
import { getDomain } from 'tldts-experimental';
import { isolatedRealmOf } from './pageScripts';

/**
 * `blockAds` and `blockChats`: Ghostery's filter engine, compiled from the filter lists that ship with the project
 * (shared/capture/filters/, rebuilt by `npm run filters:update`), one engine per switch. Network filters abort
 * matching requests before they leave the browser; cosmetic filters hide matching elements in every frame, applied
 * once the page has loaded and again just before the image, so the image never races the hiding.
 */

/** Where the serialized engines and their manifests live: beside this module, and beside the Lambda bundle. */
export const FILTER_DIR = fileURLToPath(new URL('./filters/', import.meta.url));

/**
 * The engines, by the switch that asks for them. Gzipped: half the size in the function bundle, which shares
 * Lambda's 250 MiB with the browser layer.
 */
export const FILTER_SETS = {
  /** EasyList, EasyPrivacy and the EasyList Cookie List. */
  ads: { engine: 'engine.bin.gz', manifest: 'lists.json' },
  /** Fanboy's Anti-Chat List: chat and support widgets. */
  chats: { engine: 'chats.bin.gz', manifest: 'chats.json' },
} as const;
export type FilterSet = keyof typeof FILTER_SETS;

const engines = new Map<FilterSet, Promise<FiltersEngine>>();

/**
 * An engine, read, unzipped and deserialized once per warm process (about 150 ms for the ads engine), on the first
 * capture that asks.
 */
export function filterEngine(set: FilterSet = 'ads'): Promise<FiltersEngine> {
  let engine = engines.get(set);
  if (!engine) {
    engine = readFile(`${FILTER_DIR}${FILTER_SETS[set].engine}`).then((zipped) =>
      FiltersEngine.deserialize(new Uint8Array(gunzipSync(zipped))),
    );
    engines.set(set, engine);
    engine.catch(() => engines.delete(set));
  }
  return engine;
}

/** The filter sets a capture asks for. */
export function filterSetsOf(spec: { blockAds: boolean; blockChats: boolean }): FilterSet[] {
  return [...(spec.blockAds ? ['ads' as const] : []), ...(spec.blockChats ? ['chats' as const] : [])];
}

/**
 * Network blocking for a fresh page, before it navigates: every request of the page and its frames is paused, asked
 * of the engines of `sets`, and failed or let go. Through a CDP session of our own rather than puppeteer's request
 * interception, which pairs each pause with its network event and a frame before anyone may answer: a few ms a
 * capture. The top frame's own document is never blocked (the customer asked for that page); a frame's document is
 * matched as a subdocument, which puppeteer could not tell apart. Frames share the page's target (@sparticuz/chromium
 * runs without site isolation), so this session sees their requests too. A page prepared ahead of a capture gets it
 * then, off the request path.
 */
export async function startRequestBlocking(page: Page, sets: FilterSet[]): Promise<RequestBlocking> {
  const [session, ...loaded] = await Promise.all([
    page.createCDPSession(),
    ...sets.map((set) => filterEngine(set)),
  ]);
  let blockers = loaded;
  let topFrameId: string | undefined;
  /** Frames whose document was refused: their elements are collapsed after load. */
  const blockedFrames = new Set<string>();
  session.on('Fetch.requestPaused', (event) => {
    const { requestId } = event;
    const blocked = blockers.some((blocker) => isBlocked(blocker, event, topFrameId, page.url()));
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
    sets,
    use: async (wanted) => {
      blockers = await Promise.all(wanted.map((set) => filterEngine(set)));
    },
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
export interface RequestBlocking {
  /** The filter sets it was started with. */
  sets: FilterSet[];
  /** Blocks by these sets from now on (a page prepared with one set, for a capture that wants others too). */
  use(sets: FilterSet[]): Promise<void>;
  /** Switches it off (a page prepared with it, for a capture that does not want it). */
  stop(): Promise<void>;
  /**
   * Hides the element of each frame whose document was refused, as ad blockers in browsers do: an empty box the
   * size of the ad would be left otherwise.
   */
  collapseBlockedFrames(): Promise<void>;
}

/**
 * Before navigation: network blocking on the page by the `wanted` sets, or none, for a page prepared with it
 * (`running`) or not. Answers the page's blocking when it is on.
 */
export async function setRequestBlocking(
  page: Page,
  wanted: FilterSet[],
  running: RequestBlocking | undefined,
): Promise<RequestBlocking | undefined> {
  if (wanted.length === 0) {
    await running?.stop();
    return undefined;
  }
  if (!running) return startRequestBlocking(page, wanted);
  if (wanted.join() !== running.sets.join()) await running.use(wanted);
  return running;
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

/**
 * How much of a URL the engines read. Their work grows with its length, on the renderer process's event loop: a page
 * asking for images at 2 MB URLs held it about a second each, every capture of the process with it (red team). No
 * filter rule looks that far into a URL.
 */
const MATCHED_URL_CHARS = 8 * 1024;

function isBlocked(
  blocker: FiltersEngine,
  event: Protocol.Fetch.RequestPausedEvent,
  topFrameId: string | undefined,
  pageUrl: string,
): boolean {
  const isDocument = event.resourceType === 'Document';
  if (isDocument && event.frameId === topFrameId) return false;
  const request = Request.fromRawDetails({
    url: event.request.url.slice(0, MATCHED_URL_CHARS),
    sourceUrl: pageUrl.slice(0, MATCHED_URL_CHARS),
    type: isDocument ? 'sub_frame' : (event.resourceType.toLowerCase() as RequestType),
  });
  return blocker.match(request).match;
}

/**
 * Cosmetic filtering of every frame by the engines of `sets` (the lists' rules for its host and for what its DOM
 * holds now), and the frames whose document was refused collapsed. Run after load and again just before the image:
 * elements the page adds later (ad slots filled by script, a widget that opens after a delay) are hidden too.
 */
export async function hideFiltered(
  page: Page,
  sets: FilterSet[],
  blocking: RequestBlocking | undefined,
  addStyleSheet: StyleSheetAdder,
): Promise<void> {
  const blockers = await Promise.all(sets.map((set) => filterEngine(set)));
  await Promise.all([
    ...page.frames().map((frame) => hideInFrame(blockers, frame, addStyleSheet).catch(() => undefined)),
    blocking?.collapseBlockedFrames(),
  ]);
}

/**
 * EasyList exempts a developer's own machine from its generic hiding rules (`@@://127.0.0.1$generichide`, and the
 * same for localhost), so that ad integrations can be tried there. A capture that asks for the hiding wants it
 * wherever the page is served from, so a page on a loopback host is matched as a site with no rules of its own.
 */
const LOOPBACK_HOST = /^(?:localhost|.+\.localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;
const UNNAMED_SITE = 'loopback.invalid';

/**
 * How many of a document's classes, ids and links the engines match, and how much of each: their work grows with both
 * on the renderer process's event loop (200,000 links took 0.65 s, twice a frame; 10,000 class names of 8 KB 1.5 s;
 * red team). The lists' hiding rules name short classes and ids, and links by their start.
 */
const MATCHED_FEATURES = 10_000;
const MATCHED_NAME_CHARS = 256;
const MATCHED_LINK_CHARS = 1024;

type DomFeatures = Awaited<ReturnType<typeof extractFeaturesFromDOM>>;

export function boundedFeatures({ classes, hrefs, ids }: DomFeatures): DomFeatures {
  const bounded = (values: string[], chars: number) =>
    values.slice(0, MATCHED_FEATURES).map((value) => value.slice(0, chars));
  return {
    classes: bounded(classes, MATCHED_NAME_CHARS),
    hrefs: bounded(hrefs, MATCHED_LINK_CHARS),
    ids: bounded(ids, MATCHED_NAME_CHARS),
  };
}

/** Adds a style sheet only the browser holds to the frame `frameId`'s document (PageControl.addStyleSheet). */
export type StyleSheetAdder = (css: string, frameId: string) => Promise<void>;

async function hideInFrame(
  blockers: FiltersEngine[],
  frame: Frame,
  addStyleSheet: StyleSheetAdder,
): Promise<void> {
  const url = frame.url();
  if (frame.detached) return;
  // A document of no host (the customer's own `html`, a data: or srcdoc frame) gets the lists' generic rules, as a
  // site with no rules of its own (red team: blockAds hid nothing in an html document).
  const web = /^https?:/.test(url);
  if (!web && !/^(?:data:|about:srcdoc$|about:blank$)/.test(url)) return;
  const pageHost = web ? new URL(url).hostname : '';
  const loopback = !web || LOOPBACK_HOST.test(pageHost);
  const hostname = loopback ? UNNAMED_SITE : pageHost;
  // Read from our isolated world, whose DOM methods the page cannot replace (red team: a page that redefined them kept
  // every ad of a blockAds capture).
  const realm = isolatedRealmOf(frame);
  const features = boundedFeatures(await realm.evaluate(extractFeaturesFromDOM));
  const styles = blockers.flatMap((blocker) => {
    const { active, styles } = blocker.getCosmeticsFilters({
      url: loopback ? `http://${UNNAMED_SITE}/` : url,
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
    return active && styles !== '' ? [styles] : [];
  });
  if (styles.length === 0) return;
  // A sheet only the browser holds: the page's Content-Security-Policy does not refuse it, and its scripts cannot take
  // it back by assigning document.adoptedStyleSheets (red team). `_id` is puppeteer's frame id, marked internal.
  await addStyleSheet(styles.join('\n'), (frame as unknown as { _id: string })._id);
}
