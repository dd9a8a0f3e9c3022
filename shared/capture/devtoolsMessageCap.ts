import { constants } from 'node:buffer';
import type { Readable } from 'node:stream';
import type { Browser } from 'puppeteer-core';
import { logger } from '../logger';
import { MAX_ANSWER_BYTES } from './rendererProtocol';

/**
 * The largest DevTools answer to one of our commands: a screenshot as large as the front takes, in base64, with room
 * for its envelope. A page decides how large some answers are (its screenshot, its HTML), so one above this is the
 * page's failure.
 */
export const MAX_DEVTOOLS_ANSWER_BYTES = Math.ceil(MAX_ANSWER_BYTES / 3) * 4 + 1024 * 1024;
/**
 * The largest DevTools event. The page decides how large some are (a `console.log` argument, an exception's text, a
 * WebSocket frame), and none that we use comes near this.
 */
export const MAX_DEVTOOLS_EVENT_BYTES = 64 * 1024 * 1024;

/** Told to the customer when a page made the browser answer more than a renderer takes. */
export const PAGE_ANSWER_TOO_LARGE = `The page made the browser answer with more than ${Math.floor(
  MAX_DEVTOOLS_ANSWER_BYTES / 1024 / 1024,
)} MiB at once, more than the service takes`;

// Puppeteer turns each message into one string: one longer than V8 allows throws inside its pipe reader, which
// nothing can catch, and the renderer process dies with every capture it runs. Both caps stay well below that.
if (MAX_DEVTOOLS_ANSWER_BYTES >= constants.MAX_STRING_LENGTH) {
  throw new Error('A DevTools answer at the cap would not fit in one string');
}

/**
 * Events no capture listens to, which puppeteer still acts on: it sends a command of its own to release every object
 * a page passes to `console.log` (a page logging 20,000 objects every 5 ms held the renderer process, and a capture
 * of another account beside it, for 48 s), and parses every exception the page throws into an error. Chromium
 * writes an event's method first.
 */
const UNHEARD_EVENTS = ['Runtime.consoleAPICalled', 'Runtime.exceptionThrown'].map((method) =>
  Buffer.from(`{"method":"${method}"`),
);
const UNHEARD_PREFIX_BYTES = Math.max(...UNHEARD_EVENTS.map((prefix) => prefix.length));

/** Enough of a message's start for its id or method, and of its end for the session it belongs to. */
const EDGE_BYTES = 256;
const MESSAGE_END = 0;

interface Dropped {
  head: Buffer;
  tail: Buffer;
  bytes: number;
}

/**
 * An event at least HEAVY_EVENT_BYTES long: what it was, whose it was, how large, and whether it was dropped above its
 * cap (puppeteer never saw it).
 */
export interface HeavyEvent {
  method?: string;
  sessionId?: string;
  bytes: number;
  dropped?: true;
}

/**
 * Events from this size on are told of (onHeavyEvent). A page decides how large many are: a request carries its URL,
 * headers and body, and a failed one is reported again in log entries and issues (a 2 MB URL made four 2 MB events);
 * smaller ones are bounded by the traffic guard's counts of requests and messages.
 */
export const HEAVY_EVENT_BYTES = 64 * 1024;

const heavyEventListeners = new WeakMap<Browser, Set<(event: HeavyEvent) => void>>();

/**
 * Tells `listener` of each heavy event of `browser`, delivered or dropped, until the returned function is called: what
 * a page makes the browser write costs the pipe every capture of the browser shares, and counts against the page's
 * budgets (pageTrafficGuard.ts).
 */
export function onHeavyEvent(browser: Browser, listener: (event: HeavyEvent) => void): () => void {
  const listeners = heavyEventListeners.get(browser) ?? new Set();
  heavyEventListeners.set(browser, listeners);
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Puts the cap between Chromium and puppeteer: the browser's DevTools pipe (its fifth stdio, which puppeteer's
 * `PipeTransport` reads) is handed to puppeteer through `capMessages`. Fails the launch if the pipe is not read as
 * expected (a puppeteer upgrade that reads it otherwise), rather than run a browser whose pages can kill us.
 */
export function capDevToolsMessages(browser: Browser): void {
  const pipe = browser.process()?.stdio[4] as Readable | null | undefined;
  const readers = pipe?.listeners('data') ?? [];
  if (!pipe || readers.length !== 1) {
    throw new Error(`Expected puppeteer to read the DevTools pipe once, found ${readers.length} readers`);
  }
  const puppeteerReader = readers[0] as (chunk: Buffer) => void;
  // Puppeteer drops its 'error' listeners when its connection closes, and our reader keeps the pipe flowing: an error
  // after that (ECONNRESET as a browser being replaced dies) was uncaught, and would end the process with every
  // capture in it (red team, round 19).
  for (const end of [browser.process()?.stdio[3], pipe]) {
    end?.on('error', (error) => logger.warn('The DevTools pipe failed', { error }));
  }
  // Puppeteer stops reading when its connection closes (it removes its reader, which is no longer on the pipe, and
  // its transport throws on anything read after): from then on, whatever Chromium still sends goes nowhere. The
  // connection says it closed just before its transport does.
  let connected = true;
  browser.once('disconnected', () => {
    connected = false;
  });
  const read = capMessages(puppeteerReader, undefined, (event) => {
    for (const listener of heavyEventListeners.get(browser) ?? []) listener(event);
  });
  pipe.off('data', puppeteerReader);
  pipe.on('data', (chunk: Buffer) => {
    if (connected) read(chunk);
  });
}

/**
 * Passes DevTools messages (JSON, each ended by a NUL byte) on to `deliver` as they came, but none of UNHEARD_EVENTS
 * and no message above its cap: an event above MAX_DEVTOOLS_EVENT_BYTES is dropped, and an answer above
 * MAX_DEVTOOLS_ANSWER_BYTES becomes an error answer to the same command, so the call that asked for it fails at once
 * instead of waiting for its timeout. `heavyEvent` hears of every event of HEAVY_EVENT_BYTES or more, dropped or not.
 * A message's bytes are held until it is whole (as the reader would hold them), so none of an oversized message
 * is ever delivered, and they are let go as soon as it passes its cap.
 */
export function capMessages(
  deliver: (chunk: Buffer) => void,
  caps = { answer: MAX_DEVTOOLS_ANSWER_BYTES, event: MAX_DEVTOOLS_EVENT_BYTES },
  heavyEvent: (event: HeavyEvent) => void = () => undefined,
): (chunk: Buffer) => void {
  let held: Buffer[] = [];
  let heldBytes = 0;
  /** The held message's cap, read from its start once it is larger than an event may be. */
  let cap: number | undefined;
  let dropped: Dropped | undefined;
  return (chunk) => {
    for (let start = 0; start < chunk.length; ) {
      const nul = chunk.indexOf(MESSAGE_END, start);
      const end = nul === -1 ? chunk.length : nul + 1;
      const piece = chunk.subarray(start, end);
      start = end;
      const body = nul === -1 ? piece : piece.subarray(0, -1);
      if (dropped) {
        dropped.bytes += body.length;
        dropped.tail = lastBytes([dropped.tail, body.subarray(-EDGE_BYTES)]);
      } else {
        held.push(body);
        heldBytes += body.length;
        if (heldBytes > caps.event) {
          cap ??= answerId(firstBytes(held)) === undefined ? caps.event : caps.answer;
          if (heldBytes > cap) {
            dropped = { head: firstBytes(held), tail: lastBytes(held), bytes: heldBytes };
            held = [];
            heldBytes = 0;
          }
        }
      }
      if (nul === -1) continue;
      cap = undefined;
      if (dropped) {
        const { id, ...event } = whatWasDropped(dropped);
        dropped = undefined;
        if (id === undefined) heavyEvent({ ...event, dropped: true });
        else deliver(errorAnswer(id, event.sessionId));
      } else {
        if (heldBytes >= HEAVY_EVENT_BYTES && answerId(firstBytes(held)) === undefined) {
          heavyEvent(describe(firstBytes(held), lastBytes(held), heldBytes));
        }
        if (!isUnheard(held)) {
          // The last body is delivered with its NUL, as it came (the same bytes of `chunk`, not a copy).
          held.pop();
          for (const part of held) deliver(part);
          deliver(piece);
        }
        held = [];
        heldBytes = 0;
      }
    }
  };
}

/** True for a whole message that is one of UNHEARD_EVENTS (most messages come in one piece: no copy then). */
function isUnheard(parts: Buffer[]): boolean {
  const [first] = parts;
  const head = first && first.length >= UNHEARD_PREFIX_BYTES ? first : firstBytes(parts);
  return UNHEARD_EVENTS.some((prefix) => head.subarray(0, prefix.length).equals(prefix));
}

function firstBytes(parts: Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let bytes = 0;
  for (const part of parts) {
    if (bytes >= EDGE_BYTES) break;
    kept.push(part);
    bytes += part.length;
  }
  return Buffer.from(Buffer.concat(kept).subarray(0, EDGE_BYTES));
}

function lastBytes(parts: Buffer[]): Buffer {
  const kept: Buffer[] = [];
  let bytes = 0;
  for (const part of parts.toReversed()) {
    if (bytes >= EDGE_BYTES) break;
    kept.unshift(part);
    bytes += part.length;
  }
  return Buffer.from(Buffer.concat(kept).subarray(-EDGE_BYTES));
}

/** Chromium writes an answer's id first; the page's own text only ever comes later, escaped. */
function answerId(head: Buffer): number | undefined {
  const id = /^\{"id":(\d+)[,}]/.exec(head.toString('latin1'))?.[1];
  return id === undefined ? undefined : Number(id);
}

/** A message's method if it is an event, and its session (Chromium appends that last), from its edges. */
function describe(head: Buffer, tail: Buffer, bytes: number): HeavyEvent {
  const method = /^\{"method":"([\w.]+)"/.exec(head.toString('latin1'))?.[1];
  const sessionId = /,"sessionId":"([0-9A-F]+)"\}$/.exec(tail.toString('latin1'))?.[1];
  return { bytes, ...(method ? { method } : {}), ...(sessionId ? { sessionId } : {}) };
}

/** A dropped message's id if it was an answer, or what it was if an event; logged. */
function whatWasDropped(dropped: Dropped): HeavyEvent & { id?: number } {
  const id = answerId(dropped.head);
  const event = describe(dropped.head, dropped.tail, dropped.bytes);
  logger.warn('Dropped an oversized DevTools message', {
    bytes: dropped.bytes,
    ...(id === undefined ? { method: event.method } : { id }),
  });
  return id === undefined ? event : { ...event, id };
}

/** The error answer standing in for an oversized one, so the command that asked for it fails at once. */
function errorAnswer(id: number, sessionId: string | undefined): Buffer {
  const answer = {
    id,
    error: { code: -32000, message: PAGE_ANSWER_TOO_LARGE },
    ...(sessionId ? { sessionId } : {}),
  };
  return Buffer.from(`${JSON.stringify(answer)}\0`);
}
