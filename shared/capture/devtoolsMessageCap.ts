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

/** An event above its cap, which puppeteer never saw: what it was, whose it was, and how large. */
export interface DroppedEvent {
  method?: string;
  sessionId?: string;
  bytes: number;
}

const droppedEventListeners = new WeakMap<Browser, Set<(event: DroppedEvent) => void>>();

/**
 * Tells `listener` of each event of `browser` that the cap dropped, until the returned function is called: what a
 * page made too large to read still cost the pipe, and counts against the page's budgets (pageTrafficGuard.ts).
 */
export function onDroppedEvent(browser: Browser, listener: (event: DroppedEvent) => void): () => void {
  const listeners = droppedEventListeners.get(browser) ?? new Set();
  droppedEventListeners.set(browser, listeners);
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
    for (const listener of droppedEventListeners.get(browser) ?? []) listener(event);
  });
  pipe.off('data', puppeteerReader);
  pipe.on('data', (chunk: Buffer) => {
    if (connected) read(chunk);
  });
}

/**
 * Passes DevTools messages (JSON, each ended by a NUL byte) on to `deliver` as they came, but none of UNHEARD_EVENTS
 * and no message above its cap: an event above MAX_DEVTOOLS_EVENT_BYTES is dropped (`droppedEvent` hears of it),
 * and an answer above MAX_DEVTOOLS_ANSWER_BYTES becomes an error answer to the same command, so the call that asked
 * for it fails at once instead of waiting for its timeout.
 * A message's bytes are held until it is whole (as the reader would hold them), so none of an oversized message
 * is ever delivered, and they are let go as soon as it passes its cap.
 */
export function capMessages(
  deliver: (chunk: Buffer) => void,
  caps = { answer: MAX_DEVTOOLS_ANSWER_BYTES, event: MAX_DEVTOOLS_EVENT_BYTES },
  droppedEvent: (event: DroppedEvent) => void = () => undefined,
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
        if (id === undefined) droppedEvent(event);
        else deliver(errorAnswer(id, event.sessionId));
      } else {
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

/** A dropped message's id if it was an answer, its method if an event, and its session (Chromium appends that last). */
function whatWasDropped(dropped: Dropped): DroppedEvent & { id?: number } {
  const id = answerId(dropped.head);
  const method = /^\{"method":"([\w.]+)"/.exec(dropped.head.toString('latin1'))?.[1];
  const sessionId = /,"sessionId":"([0-9A-F]+)"\}$/.exec(dropped.tail.toString('latin1'))?.[1];
  logger.warn('Dropped an oversized DevTools message', {
    bytes: dropped.bytes,
    ...(id === undefined ? { method } : { id }),
  });
  return {
    bytes: dropped.bytes,
    ...(id === undefined ? {} : { id }),
    ...(method ? { method } : {}),
    ...(sessionId ? { sessionId } : {}),
  };
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
