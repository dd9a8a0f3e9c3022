import { z } from 'zod';
import { DEVICE_NAMES } from './devices';

export const MAX_URL_LENGTH = 2048;
export const IMAGE_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

const dimension = (fallback: number) => z.number().int().min(320).max(3840).default(fallback);

/**
 * The screenshot request body (spec 2.1), the single source of its type. Unknown fields are refused, defaults
 * applied; the URL must be absolute http(s) and at most 2048 characters. Whether its host may be reached is decided
 * later, by the URL policy, because that needs DNS.
 */
export const screenshotRequest = z.strictObject({
  url: z
    .string()
    .max(MAX_URL_LENGTH, `url must be at most ${MAX_URL_LENGTH} characters`)
    .pipe(z.url({ protocol: /^https?$/, message: 'url must be a valid http:// or https:// URL' })),
  width: dimension(1920),
  height: dimension(1080),
  format: z.enum(IMAGE_FORMATS).default('png'),
  quality: z.number().int().min(1).max(100).default(90),
  fullPage: z.boolean().default(false),
  device: z.enum(DEVICE_NAMES).optional(),
  delay: z.number().int().min(0).max(30_000).default(0),
});

export type ScreenshotRequest = z.infer<typeof screenshotRequest>;
