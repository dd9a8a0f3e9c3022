import { chromiumExecutable } from './packedChromium';

/*
 * Imported first by the renderer function's entry, for its side effect: a new sandbox starts inflating the layer's
 * Chromium (the largest part of its cold start) on the thread pool while the main thread is still loading the rest of
 * the function's code. Only light modules come before it. The launch asks for the same inflated copy and reports a
 * failure itself (a failed inflating is forgotten, so the launch tries again).
 */
chromiumExecutable(process.env).catch(() => undefined);
