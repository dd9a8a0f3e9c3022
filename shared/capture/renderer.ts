/** When the page counts as loaded: its load event, its DOM parsed, or no request in flight for a while. */
export const WAIT_UNTIL = ['load', 'domcontentloaded', 'networkidle'] as const;
export type WaitUntil = (typeof WAIT_UNTIL)[number];

export const IMAGE_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];
/** The page's content as text instead of pixels: its main content as Markdown, or its rendered DOM. */
export const CONTENT_FORMATS = ['markdown', 'html'] as const;
export type ContentFormat = (typeof CONTENT_FORMATS)[number];
/**
 * What a renderer produces: an image (AVIF encoded from the browser's PNG, avifEncoding.ts), a document printed by
 * Chromium's own PDF engine, or the page's text.
 */
export const OUTPUT_FORMATS = [...IMAGE_FORMATS, 'pdf', ...CONTENT_FORMATS, 'avif'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export const CAPTURE_CONTENT_TYPES: Record<OutputFormat, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  pdf: 'application/pdf',
  markdown: 'text/markdown; charset=utf-8',
  html: 'text/html; charset=utf-8',
  avif: 'image/avif',
};

export function isImageFormat(format: OutputFormat): format is ImageFormat {
  return (IMAGE_FORMATS as readonly string[]).includes(format);
}

export function isContentFormat(format: OutputFormat): format is ContentFormat {
  return (CONTENT_FORMATS as readonly string[]).includes(format);
}

export const MEDIA_TYPES = ['screen', 'print'] as const;
export type MediaType = (typeof MEDIA_TYPES)[number];
export const PAPER_FORMATS = ['A3', 'A4', 'A5', 'Letter', 'Legal', 'Tabloid'] as const;
export type PaperFormat = (typeof PAPER_FORMATS)[number];
/** Each paper's portrait size in millimetres, as puppeteer gives it to Chromium. */
export const PAPER_SIZES_MM: Record<PaperFormat, { width: number; height: number }> = {
  A3: { width: 297, height: 420 },
  A4: { width: 210, height: 297 },
  A5: { width: 148, height: 210 },
  Letter: { width: 215.9, height: 279.4 },
  Legal: { width: 215.9, height: 355.6 },
  Tabloid: { width: 279.4, height: 431.8 },
};
/** A printed document is cut after this many pages. */
export const MAX_PDF_PAGES = 100;

/** How a PDF is printed (after defaults). Margins are CSS lengths (`10mm`, `0.5in`, `1cm`, `24px`). */
export interface PdfOptions {
  paperFormat: PaperFormat;
  landscape: boolean;
  printBackground: boolean;
  margin: { top: string; right: string; bottom: string; left: string };
  /** Pages to print, like `1-5, 8`; all when absent. */
  pageRanges?: string;
  /** HTML with Chromium's date, title, url, pageNumber and totalPages classes; either shows both (one may be empty). */
  headerTemplate?: string;
  footerTemplate?: string;
}

/** Bounds of what the metadata holds of the page's own strings: a hostile page cannot make the answer huge. */
export const MAX_METADATA_TEXT = 2048;
export const MAX_METADATA_PROPERTIES = 64;

/** What the rendered page says about itself (`metadata: true`); every absent value is null. */
export interface PageMetadata {
  title: string | null;
  description: string | null;
  lang: string | null;
  canonicalUrl: string | null;
  /** Where the page ended up, after redirects. */
  finalUrl: string | null;
  /** The HTTP status of the main document. */
  statusCode: number | null;
  favicon: string | null;
  /** Open Graph properties without their `og:` prefix. */
  openGraph: Record<string, string>;
  /** Twitter card properties without their `twitter:` prefix. */
  twitter: Record<string, string>;
}

/** Everything the browser needs to take one screenshot, after defaults and device presets are applied. */
export interface CaptureSpec {
  /** The page's address; for a document given as `html`, only the name it is reported by (HTML_SOURCE). */
  url: string;
  /** The customer's own document, rendered with an opaque origin of its own instead of loading `url`. */
  html?: string;
  width: number;
  height: number;
  format: OutputFormat;
  /** Present when format is pdf. */
  pdf?: PdfOptions;
  /** CSS media type the page is laid out for. */
  mediaType: MediaType;
  /** No default white behind a page that sets no background of its own (png and webp). */
  omitBackground: boolean;
  /** 1–100; used for jpeg and webp only. */
  quality: number;
  fullPage: boolean;
  /** Milliseconds to wait after the load event. */
  delay: number;
  userAgent: string;
  isMobile: boolean;
  hasTouch: boolean;
  /** Device pixel ratio: the image is width × scale by height × scale. */
  scale: number;
  /** Capture only the first element matching this CSS selector (never with fullPage). */
  selector?: string;
  /** Media features emulated: prefers-color-scheme dark, prefers-reduced-motion reduce. */
  darkMode: boolean;
  reducedMotion: boolean;
  /** What navigation waits for. */
  waitUntil: WaitUntil;
  /** After the delay, wait until an element matching this is visible. */
  waitForSelector?: string;
  /** Extra request headers, sent to the origin of `url` only. */
  headers: Record<string, string>;
  /** Host-only cookies for the host of `url`, set before navigation. */
  cookies: CaptureCookie[];
  /** IANA zone id, canonical. */
  timezone?: string;
  /** BCP 47 tag, canonical: navigator.language and Accept-Language. */
  locale?: string;
  /** A style sheet added after load. */
  css?: string;
  /** A script run in the page after load, before the delay. */
  js?: string;
  /** Elements matching any of these are hidden (visibility: hidden). */
  hideSelectors: string[];
  /** Ads and trackers blocked by the shipped filter lists (network and cosmetic). */
  blockAds: boolean;
  /** Cookie-consent banners refused or hidden by autoconsent's rules. */
  blockCookieBanners: boolean;
  /** Chat and support widgets blocked and hidden by the shipped annoyance list (network and cosmetic). */
  blockChats: boolean;
  /**
   * After load and the injected css and js, before the delay: the first element matching this is scrolled into view
   * and clicked.
   */
  click?: string;
  /** A main document answering 4xx or 5xx fails the capture. */
  failOnHttpError: boolean;
  /** Read the page's metadata (title, description, Open Graph, …) as well. */
  metadata: boolean;
}

export interface CaptureCookie {
  name: string;
  value: string;
  path?: string;
  secure?: boolean;
  httpOnly?: boolean;
  sameSite?: 'Strict' | 'Lax' | 'None';
}

/** The name an `html` document goes by where a URL would be shown: usage records and error bodies. */
export const HTML_SOURCE = 'html';

export interface CaptureResult {
  /** The image or document, or for a content format the text as UTF-8, as its content type says. */
  image: Buffer;
  contentType: string;
  /** True when a full-page capture was cut at the format's height cap, or a PDF at MAX_PDF_PAGES. */
  truncated: boolean;
  /** Present when the spec asked for it. */
  metadata?: PageMetadata;
}

/** The time a capture has, owned by the use case that admitted it. */
export interface CaptureLimits {
  /** When the capture must be over, ms since epoch. */
  deadline: number;
  /** Aborted when nobody waits for the image any more (the client hung up). */
  signal?: AbortSignal;
  /**
   * The account held no other slot when this capture was admitted: it may use the headroom beyond the shared
   * capacity (docs/api.md, "Fair sharing of capture capacity"). Absent: the shared capacity only.
   */
  newcomer?: boolean;
}

/** Port for the browser. Failures surface as CaptureFailedError with a reason safe to show the customer. */
export interface Renderer {
  /** Captures before `limits.deadline`, or fails with a timeout. */
  capture(spec: CaptureSpec, limits: CaptureLimits): Promise<CaptureResult>;
  /** Starts the browser ahead of the first request (cold start). */
  warmUp(): Promise<void>;
  /**
   * Resolves when the work a capture leaves behind (preparing the next tab) is done. Lambda freezes the process as
   * soon as the handler returns, so the handler awaits this after the response has been sent.
   */
  settle(): Promise<void>;
  close(): Promise<void>;
}

/** Full-page height caps: Chromium's texture limit, and WebP's own 16,383-pixel limit. */
export function heightCap(format: OutputFormat): number {
  return format === 'webp' ? 16_383 : 16_384;
}
