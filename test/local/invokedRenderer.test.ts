import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Writable } from 'node:stream';
import { InvokeWithResponseStreamCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type InvokeServer,
  invokeCredentials,
  LOCAL_INVOKE_REGION,
  startInvokeServer,
} from '../../local/renderer/invokeServer';
import { InvokedRenderer } from '../../shared/capture/invokedRenderer';
import { type CaptureSpec, MAX_METADATA_TEXT } from '../../shared/capture/renderer';
import {
  AnswerReader,
  encodeResult,
  GarbledAnswerError,
  MAX_ANSWER_BYTES,
  MAX_HEADER_BYTES,
} from '../../shared/capture/rendererProtocol';
import { CapacityFullError, CaptureFailedError, ClientGoneError, statusOf } from '../../shared/errors';
import { mcpRoute } from '../../shared/mcp/mcpRoute';
import { MAX_INLINE_TEXT_BYTES } from '../../shared/mcp/tools';
import { ANSWER_GRACE_MS, RESPONSE_RESERVE_MS } from '../../shared/timing';
import { mcpPost, toolCall } from '../helpers/mcpRequest';
import { fakePng } from '../helpers/memoryPorts';
import { memoryScreenshotService } from '../helpers/memoryScreenshot';
import { postFromReboundName } from '../helpers/reboundRequest';

/**
 * The front's side of the renderer boundary, against renderers that misbehave: each one is a streaming handler behind
 * the local Invoke API, called with @aws-sdk/client-lambda as the front calls the deployed function. No Chromium: what
 * is tested is what the front believes.
 */
type Behaviour = (event: unknown, stream: Writable) => Promise<unknown>;

/** A PNG's signature and header (what the front reads of it), of a viewport the spec below allows. */
const PNG = fakePng(800, 600, 'the page');
const PDF = Buffer.from('%PDF-1.4\n%hostile or not, the front cannot tell\n');
const well: Behaviour = async (_event, stream) => {
  const [header, image] = encodeResult({ image: PNG, contentType: 'image/png', truncated: false });
  stream.write(header);
  stream.end(image);
};
let behaviour: Behaviour = well;
/** Set when a handler's stream closed before it ended its answer (the front hung up). */
let hungUp = false;

/** What the front signs its invocations with (a secret of each renderer process's start). */
const credentials = invokeCredentials(randomBytes(32));
let server: InvokeServer;
let client: LambdaClient;
let renderer: InvokedRenderer;

beforeAll(async () => {
  server = await startInvokeServer(
    {
      renderer: async (event, stream) => {
        stream.once('close', () => {
          if (!stream.writableFinished) hungUp = true;
        });
        await behaviour(event, stream);
      },
    },
    30_000,
    credentials,
  );
  client = new LambdaClient({
    endpoint: server.url,
    region: LOCAL_INVOKE_REGION,
    credentials,
    maxAttempts: 1,
  });
  renderer = new InvokedRenderer(client, 'renderer');
});

afterAll(async () => {
  client?.destroy();
  await server?.close();
});

const spec = {
  url: 'https://a.test/',
  format: 'png',
  width: 800,
  height: 600,
  scale: 1,
  fullPage: false,
} as CaptureSpec;
const soon = () => Date.now() + 10_000;
/** A successful answer's header line, as a renderer taken over may write it. */
const headerOf = (fields: Record<string, unknown>) =>
  Buffer.from(
    `${JSON.stringify({ ok: true, size: PNG.length, contentType: 'image/png', truncated: false, ...fields })}\n`,
  );
/** A renderer declaring `contentType` for the PNG's bytes. */
const declaring =
  (contentType: string): Behaviour =>
  async (_e, stream) => {
    stream.write(headerOf({ contentType }));
    stream.end(PNG);
  };
/** A renderer answering `bytes` under the content type of the format asked for. */
const answering =
  (bytes: Buffer, contentType = 'image/png'): Behaviour =>
  async (_e, stream) => {
    stream.write(headerOf({ size: bytes.length, contentType }));
    stream.end(bytes);
  };

/** A renderer that writes `first`, then `chunk` for ever, until the front closes its stream; counts the chunks' bytes. */
function endlessly(chunk: Buffer, first?: Buffer): { behaviour: Behaviour; written: () => number } {
  let written = 0;
  const behaviour: Behaviour = (_event, stream) =>
    new Promise<void>((resolve) => {
      if (first) stream.write(first);
      const pump = () => {
        while (!stream.destroyed) {
          written += chunk.length;
          if (!stream.write(chunk)) {
            stream.once('drain', pump);
            return;
          }
        }
      };
      stream.once('close', () => resolve());
      pump();
    });
  return { behaviour, written: () => written };
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('a renderer that answers as the protocol says', () => {
  it('gives the front the image, and drops fields it does not know (none reaches what the front serves)', async () => {
    behaviour = async (_event, stream) => {
      stream.write(
        Buffer.from(
          `${JSON.stringify({ ok: true, size: PDF.length, contentType: 'application/pdf', truncated: true, pages: 3, link: { url: 'https://evil.example/' }, credentialed: true })}\n`,
        ),
      );
      stream.end(PDF);
    };
    const result = await renderer.capture({ ...spec, format: 'pdf' }, { deadline: soon() });
    expect(result.image.equals(PDF)).toBe(true);
    expect(result).toEqual({ image: PDF, contentType: 'application/pdf', truncated: true });
  });

  it('drops prototype keys of the header and of the metadata', async () => {
    const line = `{"ok":true,"size":${PNG.length},"contentType":"image/png","truncated":false,"constructor":{"prototype":{"polluted":true}},"__proto__":{"polluted":true},"metadata":{"title":null,"description":null,"lang":null,"canonicalUrl":null,"finalUrl":null,"statusCode":null,"favicon":null,"openGraph":{"__proto__":"x","title":"t"},"twitter":{}}}\n`;
    behaviour = async (_event, stream) => {
      stream.write(Buffer.from(line));
      stream.end(PNG);
    };
    const result = await renderer.capture(spec, { deadline: soon() });
    expect(Object.keys(result).sort()).toEqual(['contentType', 'image', 'metadata', 'truncated']);
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(result.metadata?.openGraph).toEqual({ title: 't' });
    expect(Object.getPrototypeOf(result.metadata?.openGraph)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("passes the page's metadata on only in its own shape and bounds", async () => {
    const metadata = {
      title: 'A page',
      description: null,
      lang: 'en',
      canonicalUrl: null,
      finalUrl: 'https://a.test/',
      statusCode: 200,
      favicon: null,
      openGraph: { title: 'A page' },
      twitter: {},
    };
    behaviour = async (_event, stream) => {
      stream.write(headerOf({ metadata }));
      stream.end(PNG);
    };
    expect((await renderer.capture(spec, { deadline: soon() })).metadata).toEqual(metadata);
    for (const bent of [
      { ...metadata, title: { nested: ['script'] } },
      { ...metadata, title: 'x'.repeat(MAX_METADATA_TEXT + 1) },
      // Each string within its bound, the whole over its budget (views of many jobs carry it).
      {
        ...metadata,
        openGraph: Object.fromEntries(
          Array.from({ length: 16 }, (_, i) => [`p${i}`, 'x'.repeat(MAX_METADATA_TEXT)]),
        ),
      },
      { ...metadata, openGraph: { image: 5 } },
      { ...metadata, extra: 'field' },
    ]) {
      behaviour = async (_event, stream) => {
        stream.write(headerOf({ metadata: bent }));
        stream.end(PNG);
      };
      expect(await failureOf(renderer.capture(spec, { deadline: soon() }))).toBeInstanceOf(
        CaptureFailedError,
      );
    }
  });

  it('receives the spec and the deadline, and nothing else', async () => {
    let received: unknown;
    behaviour = async (event, stream) => {
      received = event;
      await well(event, stream);
    };
    const deadline = soon();
    await renderer.capture({ ...spec, width: 800 }, { deadline });
    expect(received).toEqual({ spec: { ...spec, width: 800 }, deadline });
  });

  it("passes a failed capture's reason on to the customer", async () => {
    behaviour = async (_event, stream) => {
      stream.end(
        Buffer.from(`${JSON.stringify({ ok: false, reason: 'The page did not load within 30 s' })}\n`),
      );
    };
    const error = await failureOf(renderer.capture(spec, { deadline: soon() }));
    expect(error).toBeInstanceOf(CaptureFailedError);
    expect((error as CaptureFailedError).reason).toBe('The page did not load within 30 s');
  });
});

describe('a renderer that misbehaves fails that capture with 500, and the next one is unaffected', () => {
  const garbage: [string, Behaviour][] = [
    ['answers no header line', async (_e, stream) => stream.end(Buffer.from('not a header'))],
    ['answers a header that is not JSON', async (_e, stream) => stream.end(Buffer.from('{oops\n'))],
    [
      'announces more bytes than it sends',
      async (_e, stream) =>
        stream.end(Buffer.from(`${JSON.stringify({ ok: true, size: 99, truncated: false })}\nab`)),
    ],
    [
      'answers a header of the wrong shape',
      async (_e, stream) => stream.end(Buffer.from(`${JSON.stringify({ ok: true, size: 'big' })}\n`)),
    ],
    [
      'answers a reason longer than any the renderer writes',
      async (_e, stream) =>
        stream.end(Buffer.from(`${JSON.stringify({ ok: false, reason: 'x'.repeat(600) })}\n`)),
    ],
    ['declares an SVG (a document that runs script) for a png', declaring('image/svg+xml')],
    ['declares HTML for a png', declaring('text/html; charset=utf-8')],
    ['declares script for a png', declaring('text/javascript')],
    ['declares the type of another format it could produce (a PDF) for a png', declaring('application/pdf')],
    ['declares the png asked for with a header line after it', declaring('image/png\r\nSet-Cookie: a=b')],
    [
      'answers HTML under the png asked for',
      answering(Buffer.from('<!doctype html><script>alert(document.domain)</script>')),
    ],
    ['answers an SVG under the png asked for', answering(Buffer.from('<svg onload="alert(1)"/>'))],
    [
      'answers a png larger than the viewport asked for (the front decodes it for AVIF)',
      answering(fakePng(16_000, 16_000, 'a bomb')),
    ],
    [
      'answers a png two pixels wider than the viewport (one is rounding)',
      answering(fakePng(802, 600, 'wide')),
    ],
    ['answers a JPEG under the png asked for', answering(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]))],
    [
      'answers an empty image (only text may be empty)',
      async (_e, stream) => stream.end(headerOf({ size: 0 })),
    ],
    [
      'announces an image larger than any',
      async (_e, stream) => stream.end(headerOf({ size: MAX_ANSWER_BYTES + 1 })),
    ],
    [
      'crashes (a function error)',
      async () => {
        throw new Error('renderer crashed');
      },
    ],
  ];
  for (const [name, answer] of garbage) {
    it(name, async () => {
      behaviour = answer;
      const error = await failureOf(renderer.capture(spec, { deadline: soon() }));
      expect(error).toBeInstanceOf(CaptureFailedError);
      expect(statusOf(error)).toBe(500);
      behaviour = well;
      expect((await renderer.capture(spec, { deadline: soon() })).image.equals(PNG)).toBe(true);
    });
  }

  it.each([
    ['pdf', answering(Buffer.from('<html>not a PDF</html>'), 'application/pdf')],
    ['jpeg', answering(PNG, 'image/jpeg')],
    ['webp', answering(Buffer.from('RIFF\0\0\0\0WAVEfmt '), 'image/webp')],
    ['markdown', answering(Buffer.from([0x23, 0x20, 0xff, 0xfe, 0xc0]), 'text/markdown; charset=utf-8')],
  ])('refuses an answer to a %s whose bytes are not of that format', async (format, answer) => {
    behaviour = answer;
    const error = await failureOf(renderer.capture({ ...spec, format } as CaptureSpec, { deadline: soon() }));
    expect(error).toBeInstanceOf(CaptureFailedError);
    expect(statusOf(error)).toBe(500);
  });

  it.each([
    ['a full page as tall as the height cap', { fullPage: true }, fakePng(800, 16_384, 'tall')],
    ['an element as large as the height cap both ways', { selector: '#a' }, fakePng(16_384, 16_384, 'big')],
    ['a viewport at scale 1.5', { scale: 1.5 }, fakePng(1200, 900, 'sharp')],
    ['a smaller image than the viewport', {}, fakePng(1, 1, 'dot')],
  ])('accepts %s', async (_name, fields, bytes) => {
    behaviour = answering(bytes);
    const result = await renderer.capture({ ...spec, ...fields } as CaptureSpec, { deadline: soon() });
    expect(result.image.equals(bytes)).toBe(true);
  });

  it('refuses a full page wider than the viewport or taller than the cap', async () => {
    for (const bytes of [fakePng(1000, 600, 'wide'), fakePng(800, 16_386, 'tall')]) {
      behaviour = answering(bytes);
      expect(
        await failureOf(renderer.capture({ ...spec, fullPage: true }, { deadline: soon() })),
      ).toBeInstanceOf(CaptureFailedError);
    }
  });

  it('stops reading a header without a newline as soon as it is longer than any header', async () => {
    hungUp = false;
    // Small chunks, for ever: what the front reads of them must cost it no more than once each.
    const garbage = endlessly(Buffer.alloc(4 * 1024, 'x'));
    behaviour = garbage.behaviour;
    const error = await failureOf(renderer.capture(spec, { deadline: Date.now() + 30_000 }));
    expect(error).toBeInstanceOf(CaptureFailedError);
    expect(statusOf(error)).toBe(500);
    // Not given up on at the deadline: refused on the bytes, and the invocation closed.
    expect((error as CaptureFailedError).reason).not.toBe('The renderer did not answer in time');
    await expect.poll(() => hungUp).toBe(true);
    expect(garbage.written()).toBeGreaterThan(MAX_HEADER_BYTES);
    behaviour = well;
    expect((await renderer.capture(spec, { deadline: soon() })).image.equals(PNG)).toBe(true);
  });

  it('gives up on a renderer that never answers while the front still has its reserve to refund and answer', async () => {
    behaviour = (_event, stream) => new Promise<void>((resolve) => stream.once('close', () => resolve()));
    const deadline = Date.now() + 200;
    const error = await failureOf(renderer.capture(spec, { deadline }));
    expect(error).toBeInstanceOf(CaptureFailedError);
    expect((error as CaptureFailedError).reason).toBe('The renderer did not answer in time');
    // Deployed, the deadline is the function's remaining time less RESPONSE_RESERVE_MS: waiting past the reserve
    // would have Lambda stop the front first, with nothing refunded. So the grace fits the reserve with a second to
    // refund and answer, and the front waits that grace and then gives up (the upper bound is loose: this machine's
    // load is not what is tested).
    expect(ANSWER_GRACE_MS).toBeLessThanOrEqual(RESPONSE_RESERVE_MS - 1_000);
    const waited = Date.now() - deadline;
    expect(waited).toBeGreaterThanOrEqual(ANSWER_GRACE_MS - 50);
    expect(waited).toBeLessThan(ANSWER_GRACE_MS + 10_000);
  });

  it('gives up on a renderer that stops halfway through the image, and closes its invocation', async () => {
    hungUp = false;
    behaviour = (_event, stream) =>
      new Promise<void>((resolve) => {
        stream.write(headerOf({}));
        stream.write(PNG.subarray(0, 10));
        stream.once('close', () => resolve());
      });
    const error = await failureOf(renderer.capture(spec, { deadline: Date.now() + 200 }));
    expect(error).toBeInstanceOf(CaptureFailedError);
    expect((error as CaptureFailedError).reason).toBe('The renderer did not answer in time');
    await expect.poll(() => hungUp).toBe(true);
  });

  it('answers with the image at once when the renderer goes on writing after it, and cuts that stream off', async () => {
    hungUp = false;
    const after = endlessly(
      Buffer.alloc(64 * 1024, 'x'),
      Buffer.concat(encodeResult({ image: PNG, contentType: 'image/png', truncated: false })),
    );
    behaviour = after.behaviour;
    const result = await renderer.capture(spec, { deadline: soon() });
    expect(result.image.equals(PNG)).toBe(true);
    // What follows the answer is read and dropped, for a while only: then the invocation is closed.
    await renderer.settle();
    await expect.poll(() => hungUp, { timeout: 15_000 }).toBe(true);
    expect(after.written()).toBeGreaterThan(0);
  }, 30_000);

  it('closes the invocation when the client hangs up, so the renderer stops', async () => {
    hungUp = false;
    behaviour = (_event, stream) => new Promise<void>((resolve) => stream.once('close', () => resolve()));
    const hangUp = new AbortController();
    const capture = renderer.capture(spec, { deadline: soon(), signal: hangUp.signal });
    setTimeout(() => hangUp.abort(), 200);
    expect(await failureOf(capture)).toBeInstanceOf(ClientGoneError);
    await expect.poll(() => hungUp).toBe(true);
  });
});

describe('the local Invoke API', () => {
  it('answers only requests addressed to it by its own address (no page whose name was rebound to 127.0.0.1)', async () => {
    const invoked = { count: 0 };
    behaviour = async (_event, stream) => {
      invoked.count++;
      stream.end();
    };
    const status = await postFromReboundName(
      server.port,
      '/2021-11-15/functions/renderer/response-streaming-invocations',
      'rebound.example',
      { spec: { url: 'file:///etc/passwd' }, deadline: soon() },
    );
    expect(status).toBe(403);
    expect(invoked.count).toBe(0);
  });
  it('refuses a request a web page sent to its own address (any Origin): a browser may post there without asking', async () => {
    const invoked = { count: 0 };
    behaviour = async (_event, stream) => {
      invoked.count++;
      stream.end();
    };
    // What a page on another site sends with fetch(…, { mode: 'no-cors', method: 'POST' }) or a form: a simple
    // request, so no preflight, addressed to 127.0.0.1:<port> itself.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(
        `${server.url}/2021-11-15/functions/renderer/response-streaming-invocations`,
        { method: 'POST', headers: { Origin: 'https://evil.example', 'Content-Type': 'text/plain' } },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ spec: { url: 'file:///etc/passwd' }, deadline: soon() }));
    });
    expect(status).toBe(403);
    expect(invoked.count).toBe(0);
  });

  it('streams a large answer in events of 1 MiB at most (red team: one event per write had the front hold it twice)', async () => {
    const image = Buffer.alloc(32 * 1024 * 1024, 1);
    behaviour = async (_event, stream) => {
      // As rendererFunction.ts answers: the header, then the image in one write.
      const [header, bytes] = encodeResult({ image, contentType: 'image/png', truncated: false });
      stream.write(header);
      stream.end(bytes);
    };
    const response = await client.send(
      new InvokeWithResponseStreamCommand({ FunctionName: 'renderer', Payload: Buffer.from('{}') }),
    );
    let largest = 0;
    let total = 0;
    for await (const event of response.EventStream ?? []) {
      const bytes = event.PayloadChunk?.Payload?.byteLength ?? 0;
      largest = Math.max(largest, bytes);
      total += bytes;
    }
    expect(total).toBeGreaterThan(image.length);
    expect(largest).toBeLessThanOrEqual(1024 * 1024);
  });
});

describe('the use case across the boundary', () => {
  /** The use case over the renderer behind the local Invoke API, and an account `acct` holding 5 credits. */
  async function fundedAccount() {
    const NOW = Date.UTC(2026, 0, 1);
    const service = memoryScreenshotService({ now: () => NOW, renderer });
    const { key } = await service.addKey('acct', NOW);
    await service.credits.set('acct', 5);
    return { service, key };
  }

  it('refunds a capture whose renderer answered garbage, and charges the next one exactly', async () => {
    const { service, key } = await fundedAccount();
    behaviour = async (_e, stream) => stream.end(Buffer.from('garbage'));
    const failed = await service.capture({
      apiKey: key,
      request: () => ({ url: 'https://a.test/' }),
      deadline: soon(),
    });
    expect(failed.ok).toBe(false);
    expect(statusOf(failed.ok ? undefined : failed.error)).toBe(500);
    expect(await service.credits.balance('acct')).toBe(5);
    behaviour = well;
    const next = await service.capture({
      apiKey: key,
      request: () => ({ url: 'https://a.test/' }),
      deadline: soon(),
    });
    expect(next.ok).toBe(true);
    expect(await service.credits.balance('acct')).toBe(4);
  });

  it.each([
    ['image/svg+xml', 'png'],
    ['text/html; charset=utf-8', 'png'],
    ['image/png', 'markdown'],
  ])(
    'refunds a capture whose renderer declared %s for a %s, and serves nothing',
    async (declared, format) => {
      const { service, key } = await fundedAccount();
      behaviour = declaring(declared);
      const failed = await service.capture({
        apiKey: key,
        request: () => ({ url: 'https://a.test/', format }),
        deadline: soon(),
      });
      expect(failed.ok).toBe(false);
      expect(statusOf(failed.ok ? undefined : failed.error)).toBe(500);
      expect(await service.credits.balance('acct')).toBe(5);
    },
  );

  it('answers an MCP call whose Markdown is larger than a tool answer carries with an error, and charges nothing', async () => {
    const { service, key } = await fundedAccount();
    behaviour = answering(Buffer.alloc(MAX_INLINE_TEXT_BYTES + 1, 'a'), 'text/markdown; charset=utf-8');
    const route = mcpRoute({
      capture: service.capture,
      keys: service.keys,
      cancelledCalls: service.cancelledCalls,
    });
    const answer = await route(
      mcpPost(key, toolCall({ name: 'get_page_markdown', arguments: { url: 'https://a.test/' } })),
    );
    const { result } = JSON.parse(String(answer.body)) as {
      result: { isError?: boolean; content: { text: string }[] };
    };
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toContain('larger than');
    expect(String(answer.body).length).toBeLessThan(10_000);
    expect(await service.credits.balance('acct')).toBe(5);
  });

  it('stores and links a hostile PDF in one pass over its bytes, however its page objects are laid out', async () => {
    const { service, key } = await fundedAccount();
    // Page objects that never end: the front's old reading of the first page's size searched again from each.
    behaviour = answering(
      Buffer.from(`%PDF-1.4\n${'1 0 obj\n<</Type /Page\n'.repeat(750_000)}`),
      'application/pdf',
    );
    const outcome = await service.capture({
      apiKey: key,
      request: () => ({ url: 'https://a.test/', format: 'pdf', response: 'json' }),
      deadline: soon(),
    });
    expect(outcome.ok && 'screenshot' in outcome && outcome.screenshot.link).toMatchObject({
      width: 0,
      height: 0,
    });
  });
});

describe('the answer reader', () => {
  it('refuses a header line once more than MAX_HEADER_BYTES arrived without a newline, and not before', () => {
    const reader = new AnswerReader();
    expect(reader.push(Buffer.alloc(MAX_HEADER_BYTES - 1, 'x'))).toBe(false);
    expect(reader.push(Buffer.from('x'))).toBe(false);
    expect(() => reader.push(Buffer.from('x'))).toThrow(GarbledAnswerError);
  });

  it('refuses a newline found past MAX_HEADER_BYTES', () => {
    const reader = new AnswerReader();
    expect(reader.push(Buffer.alloc(MAX_HEADER_BYTES, 'x'))).toBe(false);
    expect(() => reader.push(Buffer.from('x\n'))).toThrow(GarbledAnswerError);
  });

  it('refuses an announced size above MAX_ANSWER_BYTES with the header, before any image byte', () => {
    const reader = new AnswerReader();
    expect(() => reader.push(headerOf({ size: MAX_ANSWER_BYTES + 1 }))).toThrow(GarbledAnswerError);
  });

  it('reads the image into one buffer of its announced size as it arrives, not gathered and copied at the end', () => {
    const image = Buffer.alloc(1024 * 1024, 7);
    const reader = new AnswerReader();
    const [header] = encodeResult({ image, contentType: 'image/png', truncated: false });
    expect(reader.push(Buffer.concat([header as Buffer, image.subarray(0, 1000)]))).toBe(false);
    for (let at = 1000; at < image.length; at += 64 * 1024)
      reader.push(image.subarray(at, Math.min(at + 64 * 1024, image.length)));
    const answer = reader.answer();
    if (!answer.ok) throw new Error('a success was expected');
    expect(answer.result.image.equals(image)).toBe(true);
    // Its own memory, of exactly its size: the header and the chunks it came in are not held with it.
    expect(answer.result.image.buffer.byteLength).toBe(image.length);
  });

  it('refuses bytes beyond the announced size as soon as they arrive, and a failure that carries any', () => {
    const reader = new AnswerReader();
    expect(() => reader.push(Buffer.concat([headerOf({}), PNG, Buffer.from('x')]))).toThrow(
      GarbledAnswerError,
    );
    const failure = new AnswerReader();
    expect(() => failure.push(Buffer.from(`${JSON.stringify({ ok: false, reason: 'no' })}\nextra`))).toThrow(
      GarbledAnswerError,
    );
  });

  it('finds a header line split over chunks, and is complete with its last byte', () => {
    const reader = new AnswerReader();
    const bytes = Buffer.concat(encodeResult({ image: PNG, contentType: 'image/png', truncated: false }));
    for (let i = 0; i < bytes.length - 1; i++) expect(reader.push(bytes.subarray(i, i + 1))).toBe(false);
    expect(reader.push(bytes.subarray(bytes.length - 1))).toBe(true);
    const answer = reader.answer();
    expect(answer.ok && answer.result.image.equals(PNG)).toBe(true);
  });
});

/**
 * Lambda's throttle as the SDK reads it off the wire: 429 with `x-amzn-errortype: TooManyRequestsException`, at once.
 * A gate before the local Invoke API throttles the function `shared` (the shared renderer at its reserved
 * concurrency) and passes every other invocation through, so `renderer` plays the headroom renderer.
 */
describe('a shared renderer that Lambda throttles', () => {
  let gate: Server;
  let gated: LambdaClient;
  const asked: string[] = [];

  beforeAll(async () => {
    const target = new URL(server.url);
    gate = createServer((req, res) => {
      const name = decodeURIComponent(/\/functions\/([^/]+)\//.exec(req.url ?? '')?.[1] ?? '');
      asked.push(name);
      if (name === 'shared') {
        req.resume();
        res
          .writeHead(429, {
            'Content-Type': 'application/json',
            'x-amzn-errortype': 'TooManyRequestsException',
          })
          .end(
            JSON.stringify({
              Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
              message: 'Rate Exceeded.',
            }),
          );
        return;
      }
      const forwarded = request(
        {
          host: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          // The Host the client signed (the relay's): the Invoke API checks the signature over it.
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(forwarded);
    });
    gate.listen(0, '127.0.0.1');
    await once(gate, 'listening');
    gated = new LambdaClient({
      endpoint: `http://127.0.0.1:${(gate.address() as AddressInfo).port}`,
      region: LOCAL_INVOKE_REGION,
      credentials,
      maxAttempts: 1,
    });
  });

  afterAll(async () => {
    gated?.destroy();
    gate?.closeAllConnections();
    await new Promise((resolve) => gate?.close(resolve));
  });

  it('sends a newcomer’s capture to the headroom renderer', async () => {
    behaviour = well;
    asked.length = 0;
    const pair = new InvokedRenderer(gated, 'shared', 'renderer');
    const result = await pair.capture(spec, { deadline: soon(), newcomer: true });
    expect(result.image.equals(PNG)).toBe(true);
    expect(asked).toEqual(['shared', 'renderer']);
  });

  it('refuses any other capture for capacity at once, without asking the headroom renderer', async () => {
    asked.length = 0;
    const pair = new InvokedRenderer(gated, 'shared', 'renderer');
    expect(await failureOf(pair.capture(spec, { deadline: soon(), newcomer: false }))).toBeInstanceOf(
      CapacityFullError,
    );
    expect(await failureOf(pair.capture(spec, { deadline: soon() }))).toBeInstanceOf(CapacityFullError);
    expect(asked).toEqual(['shared', 'shared']);
  });

  it('refuses a newcomer too when the headroom renderer is throttled as well', async () => {
    asked.length = 0;
    const bothFull = new InvokedRenderer(gated, 'shared', 'shared');
    expect(await failureOf(bothFull.capture(spec, { deadline: soon(), newcomer: true }))).toBeInstanceOf(
      CapacityFullError,
    );
    expect(asked).toEqual(['shared', 'shared']);
  });

  it('leaves a failure that is not a throttle as before: 500, no second renderer asked', async () => {
    asked.length = 0;
    const missing = new InvokedRenderer(gated, 'no-such-function', 'renderer');
    const error = await failureOf(missing.capture(spec, { deadline: soon(), newcomer: true }));
    expect(error).toBeInstanceOf(CaptureFailedError);
    expect(statusOf(error)).toBe(500);
    expect(asked).toEqual(['no-such-function']);
  });
});
