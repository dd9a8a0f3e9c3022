import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { invocationContext } from '../../local/invocationContext';
import { MAX_METADATA_BYTES, metadataBytes, withinMetadataBudget } from '../../shared/capture/metadataBudget';
import type { CaptureResult, Renderer } from '../../shared/capture/renderer';
import { decodeAnswer, MAX_ANSWER_BYTES } from '../../shared/capture/rendererProtocol';
import { CaptureFailedError, CaptureTimedOutError, ValidationError } from '../../shared/errors';
import { rendererHandler } from '../../shared/http/adapter/rendererFunction';

/**
 * The renderer function's handler, on its own: whatever it is sent (it trusts no caller, though only the front may
 * invoke it) and however the capture ends, it answers in the protocol, and a failure keeps its kind and its fault.
 */

function rendererThat(capture: () => Promise<CaptureResult>): Renderer {
  return {
    capture,
    warmUp: async () => undefined,
    settle: async () => undefined,
    close: async () => undefined,
  };
}

async function answerTo(event: unknown, renderer: Renderer) {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  await rendererHandler(renderer)(event, stream, invocationContext());
  return decodeAnswer(Buffer.concat(chunks));
}

const request = { spec: { url: 'https://example.com/' }, deadline: Date.now() + 10_000 };
const neverCalled = rendererThat(() => {
  throw new Error('the renderer must not be asked');
});

describe('the renderer function', () => {
  it.each([
    ['nothing', undefined],
    ['a string', 'capture please'],
    ['a spec without a url', { spec: {}, deadline: Date.now() + 1_000 }],
    ['a deadline that is not a time', { spec: { url: 'https://example.com/' }, deadline: 'soon' }],
    // Red team: a spec sent past the front locally read the identity provider's private key this way.
    ['a file address', { spec: { url: 'file:///etc/passwd' }, deadline: Date.now() + 1_000 }],
    ['a javascript: address', { spec: { url: 'javascript:1' }, deadline: Date.now() + 1_000 }],
    ['no address at all', { spec: { url: 'html' }, deadline: Date.now() + 1_000 }],
  ])('answers a failure, without capturing, to %s', async (_, event) => {
    expect(await answerTo(event, neverCalled)).toEqual({
      ok: false,
      reason: 'The renderer received an invalid request',
    });
  });

  it('passes on an invalid selector as a 400 with its details', async () => {
    const details = [
      { code: 'invalid_selector', path: ['click'], message: 'click is not a valid CSS selector' },
    ];
    const answer = await answerTo(
      request,
      rendererThat(async () => {
        throw new ValidationError(details);
      }),
    );
    expect(answer).toMatchObject({ ok: false, kind: 'invalid', details });
  });

  it("keeps a time budget's kind and the page's fault", async () => {
    const answer = await answerTo(
      request,
      rendererThat(async () => {
        throw new CaptureTimedOutError('https://example.com/', 'The page did not load within 30 s', 'page');
      }),
    );
    expect(answer).toEqual({
      ok: false,
      reason: 'The page did not load within 30 s',
      kind: 'timedOut',
      fault: 'page',
    });
  });

  it('tells an unexplained error in general terms, as our fault', async () => {
    const answer = await answerTo(
      request,
      rendererThat(async () => {
        throw new Error('secret internals at /var/task/index.js');
      }),
    );
    expect(answer).toEqual({ ok: false, reason: 'The page could not be captured' });
    const failed = await answerTo(
      request,
      rendererThat(async () => {
        throw new CaptureFailedError('https://example.com/', 'x'.repeat(10_000));
      }),
    );
    expect(failed).toMatchObject({ ok: false, fault: 'service' });
    expect((failed as { reason: string }).reason.length).toBeLessThanOrEqual(500);
  });

  it('answers an image larger than the front takes as a failure of the page, not an answer it must refuse', async () => {
    // A full page of noise at 11,520 px wide (3,840 at scale 3) weighs more than MAX_ANSWER_BYTES as PNG: the page
    // made it so, and an answer the front refuses would count as ours (no slot penalty for the free capture).
    const answer = await answerTo(
      request,
      rendererThat(async () => ({
        image: Buffer.allocUnsafe(MAX_ANSWER_BYTES + 1),
        contentType: 'image/png',
        truncated: false,
      })),
    );
    expect(answer).toEqual({
      ok: false,
      reason: 'The image is larger than 190 MiB, more than the service can deliver',
      fault: 'page',
    });
  });

  it('carries metadata at its largest within the header limit', async () => {
    const swollen = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, '\u0001'.repeat(100)]));
    // As heavy as the budget lets a page make it, in the characters that weigh most in JSON.
    const metadata = withinMetadataBudget({
      title: '\u0001'.repeat(2048),
      description: null,
      lang: null,
      canonicalUrl: null,
      finalUrl: `https://example.com/${'"'.repeat(3000)}`,
      statusCode: 200,
      favicon: null,
      openGraph: swollen,
      twitter: swollen,
    });
    expect(metadataBytes(metadata)).toBeGreaterThan(MAX_METADATA_BYTES - 700);
    const answer = await answerTo(
      request,
      rendererThat(async () => ({
        image: Buffer.from('png'),
        contentType: 'image/png',
        truncated: false,
        metadata,
      })),
    );
    expect(answer).toMatchObject({ ok: true, result: { metadata } });
  });
});
