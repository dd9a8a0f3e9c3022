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

export function pageHeight(world: IsolatedWorld): Promise<number> {
  return world.evaluate<number>(PAGE_HEIGHT);
}

/** Where the viewport stands on the page (CSS px): where a clip of what it shows starts. */
export function viewportOrigin(world: IsolatedWorld): Promise<{ x: number; y: number }> {
  return world.evaluate(`({ x: window.visualViewport.pageLeft, y: window.visualViewport.pageTop })`);
}

/** An element's border box on the page (CSS px, from the page's top left). */
export interface PageBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The first element matching `selector`, scrolled into view (as a screenshot of it would be), and its border box on
 * the page, measured in one go: the page's handlers of the scroll run only after. Null when none matches.
 */
export function elementBox(world: IsolatedWorld, selector: string): Promise<PageBox | null> {
  return world.evaluate<PageBox | null>(`(() => {
    const element = document.querySelector(${JSON.stringify(selector)});
    if (!element) return null;
    element.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const box = element.getBoundingClientRect();
    const viewport = window.visualViewport;
    return { x: box.left + viewport.pageLeft, y: box.top + viewport.pageTop, width: box.width, height: box.height };
  })()`);
}
