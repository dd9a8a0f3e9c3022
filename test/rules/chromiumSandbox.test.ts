import { describe, expect, it } from 'vitest';
import { chromiumArgs } from '../../shared/capture/chromiumLaunch';
import { NO_SANDBOX_FLAGS, sandboxChoice } from '../../shared/capture/chromiumSandbox';

describe('where Chromium is asked for its sandbox', () => {
  it('tries it for any user but root, outside Lambda', () => {
    expect(sandboxChoice({}, 1000)).toBe('auto');
    expect(sandboxChoice({ CHROMIUM_SANDBOX: 'auto' }, 1000)).toBe('auto');
  });

  it('never asks as root, whom Chromium refuses it, nor on Lambda, which has no user namespaces', () => {
    expect(sandboxChoice({}, 0)).toBe('off');
    expect(sandboxChoice({ AWS_LAMBDA_FUNCTION_NAME: 'renderer' }, 993)).toBe('off');
  });

  it('does what CHROMIUM_SANDBOX says, and refuses any other value', () => {
    expect(sandboxChoice({ CHROMIUM_SANDBOX: 'off' }, 1000)).toBe('off');
    expect(sandboxChoice({ CHROMIUM_SANDBOX: 'on' }, 0)).toBe('on');
    expect(() => sandboxChoice({ CHROMIUM_SANDBOX: 'yes' }, 1000)).toThrow(/on, off or auto/);
  });

  it('launches without the flags that turn it off when sandboxed, and with them otherwise', () => {
    const sandboxed = chromiumArgs(['--proxy-server=x'], true);
    for (const flag of NO_SANDBOX_FLAGS) {
      expect(sandboxed).not.toContain(flag);
      expect(chromiumArgs(['--proxy-server=x'])).toContain(flag);
    }
    // Everything else is the same: the setuid helper stays off either way.
    expect(sandboxed).toContain('--disable-setuid-sandbox');
    expect(chromiumArgs(['--proxy-server=x']).filter((flag) => !sandboxed.includes(flag))).toEqual([
      ...NO_SANDBOX_FLAGS,
    ]);
  });
});

describe("@sparticuz/chromium's defaults we refuse", () => {
  it('launches without shared memory for every page, single-process mode or web security off', () => {
    for (const args of [chromiumArgs(), chromiumArgs([], true)]) {
      expect(args.filter((flag) => flag.includes('SharedArrayBuffer'))).toEqual([]);
      expect(args).not.toContain('--single-process');
      expect(args).not.toContain('--disable-web-security');
    }
  });
});
