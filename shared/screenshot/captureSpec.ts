import { DEVICE_PRESETS } from '../capture/devices';
import type { CaptureSpec } from '../capture/renderer';
import type { ScreenshotRequest } from './schema';

/** Applies the device preset (it overrides width and height) and the desktop user agent when none is named. */
export function captureSpecOf(request: ScreenshotRequest): CaptureSpec {
  const preset = DEVICE_PRESETS[request.device ?? 'desktop'];
  const size = request.device
    ? { width: preset.width, height: preset.height }
    : { width: request.width, height: request.height };
  return {
    url: request.url,
    ...size,
    format: request.format,
    quality: request.quality,
    fullPage: request.fullPage,
    delay: request.delay,
    userAgent: preset.userAgent,
    isMobile: preset.isMobile,
    hasTouch: preset.hasTouch,
  };
}
