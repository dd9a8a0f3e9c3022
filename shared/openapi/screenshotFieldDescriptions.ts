import { DEVICE_NAMES, DEVICE_PRESETS } from '../capture/devices';
import { heightCap } from '../capture/renderer';
import { CACHE_TTL, MAX_URL_LENGTH, type ScreenshotRequest } from '../screenshot/schema';
import { IMAGE_LINK_LIFETIME_SECONDS } from '../timing';
import { CAPTURE_OPTION_DESCRIPTIONS } from './captureOptionDescriptions';
import { OUTPUT_DESCRIPTIONS } from './outputDescriptions';

/** 16384 → '16,384', as the text reads. */
const count = (n: number) => n.toLocaleString('en-US');

/**
 * Field descriptions for the screenshot body, in the OpenAPI document and the MCP tools' input schemas; keyed by the
 * schema's own fields so a rename does not compile.
 */
export const SCREENSHOT_FIELD_DESCRIPTIONS: Record<keyof ScreenshotRequest, string> = {
  url: `Page to capture: an absolute http:// or https:// URL, at most ${MAX_URL_LENGTH} characters, whose host is not a private address. Give url or html, not both`,
  width: 'Viewport width in pixels (ignored when device is given)',
  height: 'Viewport height in pixels (ignored when device is given)',
  format:
    'Output format: an image (png, jpeg, webp, avif), a PDF printed by Chromium, or the page as text: markdown (its main content, by Readability and Turndown) or html (the rendered DOM)',
  quality: 'Quality for jpeg, webp and avif; accepted and ignored for png and pdf',
  fullPage: `Capture the whole scrollable page (up to ${count(heightCap('png'))} px, as for avif; ${count(heightCap('webp'))} for webp) instead of the viewport. Not with pdf`,
  device: `Preset viewport and user agent: ${DEVICE_NAMES.map((name) => `${name} ${DEVICE_PRESETS[name].width}x${DEVICE_PRESETS[name].height}`).join(', ')}`,
  delay: 'Milliseconds to wait after the load event, before capturing',
  cache: `Answer an identical earlier request of this account from storage (X-Cache: HIT, free) while it is younger than cacheTtl; otherwise capture and store (X-Cache: MISS)`,
  async:
    'Queue the capture and answer 202 at once with the job (`Location`: its status URL); not on a signed link. The result is the `response: "json"` body, on GET /api/jobs/{id}',
  webhookUrl: `With async: where to POST the job's outcome (Standard Webhooks signature), at most ${MAX_URL_LENGTH} characters; the same URL rules as url, at submission and at each delivery`,
  cacheTtl: `Seconds a cached capture may be reused, ${count(CACHE_TTL.min)} to ${count(CACHE_TTL.max)}`,
  response: `image: the image bytes; json: the image is stored and the answer is JSON with a link valid ${IMAGE_LINK_LIFETIME_SECONDS / 3600} hour`,
  metadata:
    'With response: json, the answer also holds the page metadata (title, description, lang, canonicalUrl, finalUrl, statusCode, favicon, openGraph, twitter)',
  ...CAPTURE_OPTION_DESCRIPTIONS,
  ...OUTPUT_DESCRIPTIONS,
};

/** What the published schemas say of `url`'s shape (the handler's own check is the URL policy's). */
export const URL_SHAPE = { format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://' } as const;
