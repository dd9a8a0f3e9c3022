import type { ImageFormat } from '../screenshot/schema';

/** Everything the browser needs to take one screenshot, after defaults and device presets are applied. */
export interface CaptureSpec {
  url: string;
  width: number;
  height: number;
  format: ImageFormat;
  /** 1–100; used for jpeg and webp only. */
  quality: number;
  fullPage: boolean;
  /** Milliseconds to wait after the load event. */
  delay: number;
  userAgent: string;
  isMobile: boolean;
  hasTouch: boolean;
}

export interface CaptureResult {
  image: Buffer;
  /** True when a full-page capture was cut at the format's height cap. */
  truncated: boolean;
}

/** Port for the browser. Failures surface as CaptureFailedError with a reason safe to show the customer. */
export interface Renderer {
  /** Captures within `budgetMs`, or fails with a timeout. */
  capture(spec: CaptureSpec, budgetMs: number): Promise<CaptureResult>;
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
export function heightCap(format: ImageFormat): number {
  return format === 'webp' ? 16_383 : 16_384;
}
