import type { ScreenshotClip } from 'puppeteer-core';
import type { PageGeometry } from './pageScripts';

/** A point in a clip's terms (PageGeometry): CSS px from the far top left of what the page can scroll to. */
export interface ClipPoint {
  x: number;
  y: number;
}

/** Where the visual viewport starts, in a clip's terms. */
export function viewStart({ offset, viewport }: PageGeometry): ClipPoint {
  return { x: viewport.x + offset.x, y: viewport.y + offset.y };
}

/**
 * A clip of the page drawn as the view shows it, at its zoom: `width` pixels of the view (device-independent) wide,
 * the rows `strip.y` to `strip.y + strip.height` of the view below `from`. At a zoom under 1 (a page laid out wider
 * than a mobile device) a pixel of the view covers more than one CSS pixel.
 */
export function viewClip(
  { scale }: PageGeometry,
  from: ClipPoint,
  strip: { y: number; height: number },
  width: number,
): ScreenshotClip {
  return {
    x: from.x,
    y: from.y + strip.y / scale,
    width: width / scale,
    height: strip.height / scale,
    scale,
  };
}
