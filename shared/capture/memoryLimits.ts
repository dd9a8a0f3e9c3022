/**
 * What a page's scripts may hold. A module of its own, without the browser's imports: the service's settings read
 * the default (shared/config.ts), and the fronts carry no Chromium.
 */

/**
 * One isolate's JavaScript heap. V8's default (about 4 GB) is more than the renderer function's memory, so a page
 * that allocates without end would get the whole function killed (no answer, no refund); capped, only its renderer
 * dies and the capture fails cleanly with a 500.
 */
export const PAGE_HEAP_LIMIT_MB = 512;

/**
 * The most a capture's scripts may hold, in MiB, across every JavaScript isolate of its context: the page, each
 * dedicated worker, nested ones too (pageMemoryGuard.ts; shared workers are turned off). The heap cap is per isolate and
 * leaves array buffers (WebAssembly memory among them) out, so six workers held 3 GB under it (red team). This
 * allows a page at its heap cap with as much again in buffers and workers, inside the renderer function's 3,008 MB
 * beside Chromium itself; what the guard cannot see is in docs/reliability.md, Known limits.
 */
export const PAGE_MEMORY_LIMIT_MB = 1_024;
