import { describe, expect, it } from 'vitest';
import { abandonAfterCaptures } from '../../shared/capture/abandonAfterCaptures';
import type { CaptureSpec } from '../../shared/capture/renderer';
import { deferred } from '../helpers/deferred';
import { FakeRenderer } from '../helpers/memoryPorts';

/** The proxy gives up pending connections once the renderer's captures are all settled, never under a running one. */
describe('abandonAfterCaptures', () => {
  it('abandons after the last running capture is settled, not while another runs', async () => {
    const fake = new FakeRenderer();
    let abandoned = 0;
    const held = deferred();
    const slow = {
      ...fake,
      capture: async (spec: CaptureSpec, limits: Parameters<FakeRenderer['capture']>[1]) => {
        await held.promise;
        return fake.capture(spec, limits);
      },
      warmUp: () => fake.warmUp(),
      settle: () => fake.settle(),
      close: () => fake.close(),
    };
    const renderer = abandonAfterCaptures(slow, async () => ({ abandonPending: () => abandoned++ }));
    const spec = { url: 'https://a.test/' } as CaptureSpec;
    const limits = { deadline: Date.now() + 10_000 };
    const first = renderer.capture(spec, limits);
    const second = renderer.capture(spec, limits);
    held.resolve();
    await first;
    await second;
    await renderer.settle();
    expect(abandoned).toBe(1);

    const running = deferred();
    const blocked = abandonAfterCaptures(
      { ...slow, capture: async () => running.promise.then(() => fake.capture(spec, limits)) },
      async () => ({ abandonPending: () => abandoned++ }),
    );
    const pending = blocked.capture(spec, limits);
    await blocked.settle();
    expect(abandoned).toBe(1);
    running.resolve();
    await pending;
    await blocked.settle();
    expect(abandoned).toBe(2);
  });
});
