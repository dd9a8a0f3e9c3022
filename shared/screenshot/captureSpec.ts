import { DEVICE_PRESETS } from '../capture/devices';
import { type CaptureSpec, HTML_SOURCE } from '../capture/renderer';
import { canonicalLocale, canonicalTimeZone } from './optionFields';
import { mediaTypeOf, pdfOptionsOf } from './outputFields';
import type { ScreenshotRequest } from './schema';

/**
 * Applies the device preset (it overrides width and height), the desktop user agent when none is named (the
 * request's own `userAgent` overrides either), the defaults that depend on the format, and writes time zone and
 * locale in their canonical forms. AVIF is captured as PNG (lossless, with its alpha): the front encodes it.
 */
export function captureSpecOf(request: ScreenshotRequest): CaptureSpec {
  const preset = DEVICE_PRESETS[request.device ?? 'desktop'];
  const size = request.device
    ? { width: preset.width, height: preset.height }
    : { width: request.width, height: request.height };
  return {
    url: request.url ?? HTML_SOURCE,
    ...(request.html === undefined ? {} : { html: request.html }),
    ...size,
    format: request.format,
    ...(request.format === 'pdf' ? { pdf: pdfOptionsOf(request) } : {}),
    mediaType: mediaTypeOf(request),
    omitBackground: request.omitBackground ?? false,
    quality: request.quality,
    fullPage: request.fullPage,
    delay: request.delay,
    userAgent: request.userAgent ?? preset.userAgent,
    isMobile: preset.isMobile,
    hasTouch: preset.hasTouch,
    scale: request.scale,
    darkMode: request.darkMode,
    reducedMotion: request.reducedMotion,
    waitUntil: request.waitUntil,
    headers: request.headers ?? {},
    cookies: request.cookies ?? [],
    hideSelectors: request.hideSelectors ?? [],
    blockAds: request.blockAds,
    blockCookieBanners: request.blockCookieBanners,
    blockChats: request.blockChats,
    failOnHttpError: request.failOnHttpError,
    click: request.click,
    selector: request.selector,
    waitForSelector: request.waitForSelector,
    timezone: request.timezone && canonicalTimeZone(request.timezone),
    locale: request.locale && canonicalLocale(request.locale),
    css: request.css,
    js: request.js,
    metadata: request.metadata === true,
  };
}
