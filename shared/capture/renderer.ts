import type { WaitUntil } from '../screenshot/optionFields';

export const IMAGE_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];
/** The page's content as text instead of pixels: its main content as Markdown, or its rendered DOM. */
export const CONTENT_FORMATS = ['markdown', 'html'] as const;
export type ContentFormat = (typeof CONTENT_FORMATS)[number];
export const OUTPUT_FORMATS = [...IMAGE_FORMATS, ...CONTENT_FORMATS] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function isContentFormat(format: OutputFormat): format is ContentFormat {
  return (CONTENT_FORMATS as readonly string[]).includes(format);
}

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
  url: string;
  width: number;
  height: number;
  format: OutputFormat;
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

export interface CaptureResult {
  /** The image, or for a content format the text as UTF-8. */
  image: Buffer;
  /** True when a full-page capture was cut at the format's height cap. */
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
