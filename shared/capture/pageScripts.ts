import type { Frame, Realm } from 'puppeteer-core';
/**
 * Our own scripts in a captured page. They run in an isolated world (a separate JavaScript realm over the same DOM,
 * see pageControl.ts), so nothing the page's scripts define or replace (`Math.max`,
 * `requestAnimationFrame`, `scrollTo`, prototypes) reaches them. They are kept as source text, not functions: a
 * transpiler that keeps names (tsx, which `npm start` runs) would otherwise wrap inner functions in a `__name` helper
 * that does not exist in the page.
 */

/** Lazy-loading: scroll bound and image wait (docs/api.md, "Full page"). */
export const LAZY_SCROLL_LIMIT_PX = 50_000;
export const LAZY_IMAGE_WAIT_MS = 3_000;

/** The page's full scroll height, never less than the viewport's. */
const PAGE_HEIGHT = `Math.max(
  document.documentElement.scrollHeight,
  document.body ? document.body.scrollHeight : 0,
  window.innerHeight,
)`;

/** How deep open shadow roots are searched for images. */
const MAX_SHADOW_DEPTH = 16;

/**
 * Source text defining `allImages()`: the document's images and those of its open shadow roots, nested ones too (web
 * components keep theirs there: red team, round 23, lazy images of a shadow root were captured unloaded), at most
 * MAX_SHADOW_DEPTH roots deep.
 */
const ALL_IMAGES = `const allImages = () => {
    const images = [...document.images];
    const walk = (root, depth) => {
      for (const element of root.querySelectorAll('*')) {
        const shadow = element.shadowRoot;
        if (!shadow || depth >= ${MAX_SHADOW_DEPTH}) continue;
        images.push(...shadow.querySelectorAll('img'));
        walk(shadow, depth + 1);
      }
    };
    walk(document, 0);
    return images;
  };`;

/**
 * Scrolls the page through once, a viewport at a time, letting a frame pass at each step so that
 * IntersectionObserver callbacks and scroll-driven loaders run; native lazy images become eager first. Answers the
 * page's height once back at the top.
 */
const SCROLL_THROUGH = `(async () => {
  ${ALL_IMAGES}
  for (const img of allImages()) if (img.loading === 'lazy') img.loading = 'eager';
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
  const step = Math.max(window.innerHeight, 200);
  for (let y = 0; y < document.documentElement.scrollHeight && y < ${LAZY_SCROLL_LIMIT_PX}; y += step) {
    window.scrollTo(0, y);
    await frame();
  }
  window.scrollTo(0, 0);
  await frame();
  return ${PAGE_HEIGHT};
})()`;

/** Waits, bounded, for the images that have started loading, then for a frame. */
const AWAIT_IMAGES = `(async () => {
  ${ALL_IMAGES}
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
  await frame();
  const pending = allImages().filter((img) => !img.complete && (img.currentSrc || img.src));
  const loaded = Promise.all(
    pending.map(
      (img) =>
        new Promise((resolve) => {
          img.addEventListener('load', resolve, { once: true });
          img.addEventListener('error', resolve, { once: true });
        }),
    ),
  );
  await Promise.race([loaded, new Promise((resolve) => setTimeout(resolve, ${LAZY_IMAGE_WAIT_MS}))]);
  await frame();
})()`;

/**
 * Puppeteer's isolated world over a frame's document: it shares the DOM, not the page's JavaScript, so a page that
 * replaced a prototype (adoptedStyleSheets, querySelectorAll, document.fonts) cannot stall or refuse our code there.
 * `isolatedRealm()` is marked internal in puppeteer's types, not in its code.
 */
export function isolatedRealmOf(frame: Frame): Realm {
  return (frame as unknown as { isolatedRealm(): Realm }).isolatedRealm();
}

/** A JavaScript realm of its own over the page's document, where source text is evaluated. */
export interface IsolatedWorld {
  evaluate<T>(source: string): Promise<T>;
}

/** Scrolls the page through and back to the top; answers its height. */
export function scrollThrough(world: IsolatedWorld): Promise<number> {
  return world.evaluate<number>(SCROLL_THROUGH);
}

export async function awaitStartedImages(world: IsolatedWorld): Promise<void> {
  await world.evaluate(AWAIT_IMAGES);
}

/** How long a full page waits at most for its height to settle, and how often it looks. */
export const HEIGHT_SETTLE_MS = 1_000;
const HEIGHT_SETTLE_STEP_MS = 100;

/**
 * The page's height once it holds still: at once when it is `expected` (the height before anything changed the
 * viewport), else once two readings a step apart agree, or HEIGHT_SETTLE_MS passed.
 */
export function settledHeight(world: IsolatedWorld, expected: number): Promise<number> {
  return world.evaluate<number>(`(async () => {
    const height = () => ${PAGE_HEIGHT};
    let last = height();
    if (last === ${expected}) return last;
    const until = performance.now() + ${HEIGHT_SETTLE_MS};
    while (performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, ${HEIGHT_SETTLE_STEP_MS}));
      const now = height();
      if (now === last) return now;
      last = now;
    }
    return last;
  })()`);
}

/**
 * Where things stand, for a screenshot's clip. DevTools places a clip from the far top left of what the page can
 * scroll to, while the page measures from its scroll origin: the two differ on a page that overflows towards its
 * start (a right-to-left page wider than the viewport overflows leftwards, where scroll positions are negative), and a
 * clip placed in the page's terms showed the far end of the overflow (red team, round 23). `scale` is the zoom of the
 * visual viewport: a mobile device shows a page without `width=device-width` zoomed out to fit, so its 980 CSS pixels
 * fill 390 (round 23: a full page showed only the left 390).
 */
export interface PageGeometry {
  /** Add to a point of the page (CSS px from its scroll origin) to place it in a clip. */
  offset: { x: number; y: number };
  /** Where the visual viewport stands on the page (CSS px). */
  viewport: { x: number; y: number };
  /** CSS px per device-independent pixel of the view. */
  scale: number;
}

/**
 * Finds how far the page scrolls past its origin by asking to scroll past it and reading where it stopped, then
 * scrolling back at once. Only an axis that can run that way is tried: one that overflows sideways, and a vertical
 * writing mode's other axis. The viewport's writing mode and direction may come from the body.
 */
const PAGE_GEOMETRY = `(() => {
  const root = document.scrollingElement || document.documentElement;
  const modes = [document.documentElement, document.body].filter(Boolean).map((element) => getComputedStyle(element));
  const sideways = root.scrollWidth > root.clientWidth;
  const upwards = modes.some((style) => !style.writingMode.startsWith('horizontal'));
  const left = window.scrollX;
  const top = window.scrollY;
  let start = { x: 0, y: 0 };
  if (sideways || upwards) {
    window.scrollTo({ left: sideways ? -1e9 : left, top: upwards ? -1e9 : top, behavior: 'instant' });
    start = { x: sideways ? window.scrollX : 0, y: upwards ? window.scrollY : 0 };
    window.scrollTo({ left, top, behavior: 'instant' });
  }
  const view = window.visualViewport;
  return {
    offset: { x: -start.x, y: -start.y },
    viewport: { x: view.pageLeft, y: view.pageTop },
    scale: view.scale,
  };
})()`;

export function pageGeometry(world: IsolatedWorld): Promise<PageGeometry> {
  return world.evaluate<PageGeometry>(PAGE_GEOMETRY);
}

/** A box in a clip's terms: CSS px from the far top left of what the page can scroll to (PageGeometry). */
export interface PageBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** How many times an element is scrolled into view and measured, at most, while the page moves it (elementBox). */
const ELEMENT_MEASURES = 3;

/**
 * The first element matching `selector`, scrolled into view (as a screenshot of it would be), and its border box in a
 * clip's terms. The page's scroll handlers run at the next frame and may move it (a header that shrinks once the page
 * is scrolled: red team, round 24, the image showed what had taken its place): the box is measured again after a
 * frame, and the element scrolled to again, until it holds still, ELEMENT_MEASURES times at most. Null when none
 * matches. The box is measured from the layout viewport, which `window.scroll*` places (the visual one may be panned
 * within it).
 */
export function elementBox(world: IsolatedWorld, selector: string): Promise<PageBox | null> {
  return world.evaluate<PageBox | null>(`(async () => {
    const element = document.querySelector(${JSON.stringify(selector)});
    if (!element) return null;
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)));
    // On the page, from its scroll origin: whether the element holds still needs no clip's terms.
    const measure = () => {
      const box = element.getBoundingClientRect();
      return { x: box.left + window.scrollX, y: box.top + window.scrollY, width: box.width, height: box.height };
    };
    let box;
    for (let tries = 0; tries < ${ELEMENT_MEASURES}; tries++) {
      element.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      const before = measure();
      await frame();
      box = measure();
      if (['x', 'y', 'width', 'height'].every((side) => box[side] === before[side])) break;
    }
    // Placed in a clip's terms once it held still: the probe scrolls, which the page's handlers hear.
    const { offset } = ${PAGE_GEOMETRY};
    return { ...box, x: box.x + offset.x, y: box.y + offset.y };
  })()`);
}

/**
 * Hides every element matching one of `selectors` through its own style, with `!important`: the one declaration an
 * author style sheet cannot outrank, so it beats the page's own `!important`, inline or more specific (red team,
 * round 23: hideSelectors' style sheet lost to both). Its transitions go too: a running transition outranks every
 * `!important`, and a page's `transition: visibility 100000s` kept it shown (review, round 31). The selectors were
 * read by the browser's parser before navigation (selectorCheck.ts).
 */
export async function hideOnElements(world: IsolatedWorld, selectors: string[]): Promise<void> {
  if (selectors.length === 0) return;
  await world.evaluate(`(() => {
    for (const selector of ${JSON.stringify(selectors)}) {
      for (const element of document.querySelectorAll(selector)) {
        if (!element.style) continue;
        element.style.setProperty('transition', 'none', 'important');
        element.style.setProperty('visibility', 'hidden', 'important');
      }
    }
  })()`);
}
