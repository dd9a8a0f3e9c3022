/** Device presets (docs/api.md, "Device presets"): viewport, user agent, and touch/mobile emulation. */
export interface DevicePreset {
  width: number;
  height: number;
  userAgent: string;
  isMobile: boolean;
  hasTouch: boolean;
}

export const DEVICE_NAMES = ['mobile', 'tablet', 'desktop'] as const;
export type DeviceName = (typeof DEVICE_NAMES)[number];

export const DEVICE_PRESETS: Record<DeviceName, DevicePreset> = {
  mobile: {
    width: 390,
    height: 844,
    userAgent:
      'Mozilla/5.0 (iPhone; CPU iPhone OS 18_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.5 Mobile/15E148 Safari/604.1',
    isMobile: true,
    hasTouch: true,
  },
  tablet: {
    width: 768,
    height: 1024,
    userAgent:
      'Mozilla/5.0 (iPad; CPU OS 18_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.5 Mobile/15E148 Safari/604.1',
    isMobile: true,
    hasTouch: true,
  },
  desktop: {
    width: 1920,
    height: 1080,
    userAgent:
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/153.0.0.0 Safari/537.36',
    isMobile: false,
    hasTouch: false,
  },
};
