import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../shared/capture/chromiumLaunch';
import { ChromiumRenderer } from '../../shared/capture/chromiumRenderer';
import { createChromiumTempDir, LEFTOVER_AFTER_MS } from '../../shared/capture/chromiumTempDir';
import { captureSpecOf } from '../../shared/screenshot/captureSpec';
import { screenshotRequest } from '../../shared/screenshot/schema';
import { type PageServer, solidPage, startPageServer } from '../helpers/pageServer';

let parent: string;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'chromium-temp-test-'));
});

afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

describe("the sweep of Chromium's temp folder", () => {
  it('removes shared-memory files left longer than the threshold, and nothing else', async () => {
    const dir = await createChromiumTempDir(parent);
    const aged = (Date.now() - LEFTOVER_AFTER_MS - 1000) / 1000;
    for (const name of ['.org.chromium.Chromium.left', '.org.chromium.Chromium.fresh', 'profile-file']) {
      await writeFile(join(dir.path, name), 'pixels');
    }
    await utimes(join(dir.path, '.org.chromium.Chromium.left'), aged, aged);
    await utimes(join(dir.path, 'profile-file'), aged, aged);

    expect(await dir.sweep()).toBe(1);
    expect((await readdir(dir.path)).sort()).toEqual(['.org.chromium.Chromium.fresh', 'profile-file']);
    // Once old enough, the fresh one goes too.
    expect(await dir.sweep(Date.now() + LEFTOVER_AFTER_MS)).toBe(1);
    await dir.remove();
    await expect(readdir(dir.path)).rejects.toThrow(/ENOENT/);
  });
});

describe('launchChromium', () => {
  it('gives the browser a temp folder of its own, gone once the browser is', async () => {
    const root = await mkdtemp(join(parent, 'launch-'));
    const { browser, tempDir } = await launchChromium([], { ...process.env, TMPDIR: root });
    expect(await readdir(root)).toEqual([tempDir.path.slice(root.length + 1)]);

    await browser.close();
    // Removed on 'disconnected', which nobody awaits: allow it a moment.
    const deadline = Date.now() + 5000;
    while ((await readdir(root)).length > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readdir(root)).toEqual([]);
  });
});

describe('the renderer', () => {
  let pages: PageServer;

  beforeAll(async () => {
    pages = await startPageServer({ '/red': solidPage('#ff0000') });
  });

  afterAll(async () => {
    await pages?.close();
  });

  it('gives Chromium a temp folder of its own, and removes it with the browser', async () => {
    const root = await mkdtemp(join(parent, 'renderer-'));
    const renderer = new ChromiumRenderer({ env: { ...process.env, TMPDIR: root } });
    const spec = captureSpecOf(screenshotRequest.parse({ url: `${pages.origin}/red`, quality: 80 }));
    for (let i = 0; i < 5; i++)
      expect((await renderer.capture(spec, { deadline: Date.now() + 10_000 })).image.length).toBeGreaterThan(
        0,
      );
    await renderer.settle();
    const during = await readdir(root);
    expect(during).toHaveLength(1);
    expect(during[0]).toMatch(/^chromium-/);

    await renderer.close();
    expect(await readdir(root)).toEqual([]);
  });
});
