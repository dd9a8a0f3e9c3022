import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import type { Browser } from 'puppeteer-core';
import { describe, expect, it } from 'vitest';
import {
  capDevToolsMessages,
  capMessages,
  type DroppedEvent,
  PAGE_ANSWER_TOO_LARGE,
} from '../../shared/capture/devtoolsMessageCap';

/**
 * The cap between Chromium's DevTools pipe and puppeteer, on its own, with small caps: whatever way the pipe cuts
 * the messages into chunks, puppeteer receives exactly the bytes it would have, except for oversized messages, and
 * none of their bytes.
 */

const CAPS = { answer: 400, event: 200 };
const SESSION = '52C98BCCB408AE0C6DCD314EE5B6C8DA';

const answer = (id: number, value: string, sessionId?: string) =>
  JSON.stringify({ id, result: { value }, ...(sessionId ? { sessionId } : {}) });
const event = (value: string, sessionId?: string) =>
  JSON.stringify({
    method: 'Network.requestWillBeSent',
    params: { value },
    ...(sessionId ? { sessionId } : {}),
  });
const errorAnswer = (id: number, sessionId?: string) =>
  JSON.stringify({
    id,
    error: { code: -32000, message: PAGE_ANSWER_TOO_LARGE },
    ...(sessionId ? { sessionId } : {}),
  });

/** Runs `messages` through the cap in chunks cut at `cuts` (offsets into the whole stream) and returns what came out. */
function through(
  messages: string[],
  cuts: number[] = [],
  caps = CAPS,
  dropped: DroppedEvent[] = [],
): string[] {
  const stream = Buffer.from(messages.map((m) => `${m}\0`).join(''));
  const delivered: Buffer[] = [];
  const read = capMessages(
    (chunk) => delivered.push(chunk),
    caps,
    (event) => dropped.push(event),
  );
  const offsets = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
  let start = 0;
  for (const offset of [...offsets, stream.length]) {
    if (offset > start) read(stream.subarray(start, offset));
    start = Math.max(start, offset);
  }
  return Buffer.concat(delivered).toString().split('\0').slice(0, -1);
}

/** Messages whose values, escaped or not, may hold anything but NUL (JSON escapes it), sized around the caps. */
const message = fc.oneof(
  fc
    .tuple(fc.nat(1000), fc.string({ maxLength: 500 }), fc.option(fc.constant(SESSION), { nil: undefined }))
    .map(([id, value, session]) => answer(id, value, session)),
  fc
    .tuple(fc.string({ maxLength: 300 }), fc.option(fc.constant(SESSION), { nil: undefined }))
    .map(([value, session]) => event(value, session)),
);

/** Messages, and where the pipe cuts them into chunks. */
const messagesAndCuts = fc.tuple(fc.array(message, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 30 }));

describe('the DevTools message cap', () => {
  it('passes every message within its cap byte for byte, however the pipe cuts them', () => {
    fc.assert(
      fc.property(messagesAndCuts, ([messages, cuts]) => {
        const big = { answer: 10_000, event: 10_000 };
        expect(through(messages, cuts, big)).toEqual(messages);
      }),
    );
  });

  it('replaces each oversized answer with an error answer to the same command and session, and drops oversized events, telling what they were', () => {
    fc.assert(
      fc.property(messagesAndCuts, ([messages, cuts]) => {
        const expected = messages.flatMap((m) => {
          const bytes = Buffer.byteLength(m);
          const parsed = JSON.parse(m) as { id?: number; sessionId?: string };
          if (parsed.id === undefined) return bytes > CAPS.event ? [] : [m];
          return bytes > CAPS.answer ? [errorAnswer(parsed.id, parsed.sessionId)] : [m];
        });
        const expectedDropped = messages.flatMap((m) => {
          const bytes = Buffer.byteLength(m);
          const parsed = JSON.parse(m) as { id?: number; method?: string; sessionId?: string };
          if (parsed.id !== undefined || bytes <= CAPS.event) return [];
          return [
            { method: parsed.method, bytes, ...(parsed.sessionId ? { sessionId: parsed.sessionId } : {}) },
          ];
        });
        const dropped: DroppedEvent[] = [];
        expect(through(messages, cuts, CAPS, dropped)).toEqual(expected);
        expect(dropped).toEqual(expectedDropped);
      }),
    );
  });

  it('drops console calls and thrown exceptions, which no capture listens to, however the pipe cuts them', () => {
    const consoleCall = JSON.stringify({
      method: 'Runtime.consoleAPICalled',
      params: { args: [{ type: 'object', objectId: '1' }] },
    });
    const exception = JSON.stringify({
      method: 'Runtime.exceptionThrown',
      params: { exceptionDetails: {} },
      sessionId: SESSION,
    });
    // A heard event whose text names an unheard one is still heard: the method is Chromium's, written first.
    const heard = [answer(1, 'ok', SESSION), event('{"method":"Runtime.consoleAPICalled"')];
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 30 }), (cuts) => {
        expect(through([consoleCall, ...heard, exception], cuts)).toEqual(heard);
      }),
    );
  });

  it('takes an answer larger than any event may be, up to the answer cap', () => {
    const large = answer(7, 'x'.repeat(300), SESSION);
    expect(through([large, event('y'.repeat(300))])).toEqual([large]);
  });

  it('never hands on a byte of an oversized message, even the part read before it passed its cap', () => {
    const delivered: Buffer[] = [];
    const read = capMessages((chunk) => delivered.push(chunk), CAPS);
    read(Buffer.from('{"method":"Network.requestWillBeSent","params":{"value":"'));
    read(Buffer.from('z'.repeat(150)));
    expect(delivered).toEqual([]);
    read(Buffer.from('z'.repeat(150)));
    read(Buffer.from(`"},"sessionId":"${SESSION}"}\0${answer(3, 'ok')}\0`));
    expect(Buffer.concat(delivered).toString()).toBe(`${answer(3, 'ok')}\0`);
  });

  it('does not take page text for the session an oversized answer belongs to', () => {
    // Escaped by Chromium, a page's text cannot end the message the way Chromium's own session field does.
    const forged = answer(9, `${'q'.repeat(500)}","sessionId":"AAAA"}`);
    expect(through([forged])).toEqual([errorAnswer(9)]);
  });

  it('refuses a browser whose pipe puppeteer does not read as it used to, rather than run it uncapped', () => {
    const pipe = new PassThrough();
    const browser = Object.assign(new EventEmitter(), {
      process: () => ({ stdio: [null, null, null, null, pipe] }),
    }) as unknown as Browser;
    expect(() => capDevToolsMessages(browser)).toThrow('found 0 readers');
    pipe.on('data', () => undefined);
    pipe.on('data', () => undefined);
    expect(() => capDevToolsMessages(browser)).toThrow('found 2 readers');
  });

  it('reads the pipe in place of puppeteer while it is connected, and hands it what passes', () => {
    const pipe = new PassThrough();
    const browser = Object.assign(new EventEmitter(), {
      process: () => ({ stdio: [null, null, null, null, pipe] }),
    });
    const seen: string[] = [];
    let closed = false;
    // As puppeteer's transport: it throws on anything read once it is closed, which nothing could catch.
    const puppeteerReader = (chunk: Buffer) => {
      if (closed) throw new Error('`PipeTransport` is closed.');
      seen.push(chunk.toString());
    };
    pipe.on('data', puppeteerReader);
    capDevToolsMessages(browser as unknown as Browser);
    expect(pipe.listeners('data')).not.toContain(puppeteerReader);
    pipe.write(`${answer(1, 'ok')}\0`);
    expect(seen.join('')).toBe(`${answer(1, 'ok')}\0`);

    browser.emit('disconnected');
    closed = true;
    expect(() => pipe.write(`${event('late')}\0`)).not.toThrow();
    expect(seen.join('')).toBe(`${answer(1, 'ok')}\0`);
  });
});
