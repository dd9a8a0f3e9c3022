import { describe, expect, it } from 'vitest';
import { PAGE_MEMORY_LIMIT_MB } from '../../shared/capture/memoryLimits';
import { readServiceConfig } from '../../shared/config';

/** PAGE_MEMORY_LIMIT_MB, as an operator may set it: a whole number of MiB from 64, else the service does not start. */
describe('PAGE_MEMORY_LIMIT_MB', () => {
  it('is 1,024 MiB unless set, and takes a whole number from 64', () => {
    expect(readServiceConfig({}).pageMemoryLimitMb).toBe(PAGE_MEMORY_LIMIT_MB);
    expect(PAGE_MEMORY_LIMIT_MB).toBe(1_024);
    expect(readServiceConfig({ PAGE_MEMORY_LIMIT_MB: '300' }).pageMemoryLimitMb).toBe(300);
    expect(readServiceConfig({ PAGE_MEMORY_LIMIT_MB: '64' }).pageMemoryLimitMb).toBe(64);
  });

  it.each(['63', '0', '-1', '1.5', 'abc', '1e3x', ''])('refuses %j', (value) => {
    expect(() => readServiceConfig({ PAGE_MEMORY_LIMIT_MB: value })).toThrow();
  });
});
