import { z } from 'zod';
import { MAX_METADATA_BYTES, metadataBytes } from './metadataBudget';
import { type CaptureResult, type CaptureSpec, MAX_METADATA_PROPERTIES, MAX_METADATA_TEXT } from './renderer';

/**
 * What the front and the renderer function say to each other, the same deployed (Lambda's InvokeWithResponseStream)
 * and locally (the renderer process behind a local Invoke API). Generic on purpose: the spec goes over as JSON and
 * every field of the result but the image comes back as JSON, so new capture fields and outputs need no change here.
 *
 * The request is `{ spec, deadline }`. The streamed answer is one line of JSON (the header), a newline, then the
 * image's bytes, exactly `size` of them. A failed capture answers `{ ok: false, reason }` and no bytes.
 */
export interface RenderRequest {
  spec: CaptureSpec;
  /** When the capture must be over, ms since epoch. */
  deadline: number;
}

/**
 * What the renderer accepts: a spec object (the front has validated every field) and a deadline. Its address is
 * checked here all the same, as nothing else stops Chromium from loading it: only http and https (a customer's own
 * document comes as `html`), never a file of the machine (red team: a spec sent past the front locally read the
 * identity provider's private key through `file:`).
 */
export const renderRequestSchema = z.object({
  spec: z
    .looseObject({ url: z.string().min(1), html: z.string().optional() })
    .refine(
      (spec) => spec.html !== undefined || isWebAddress(spec.url),
      'Only http and https addresses are loaded',
    ),
  deadline: z.number().int().positive(),
});

function isWebAddress(url: string): boolean {
  const protocol = URL.parse(url)?.protocol;
  return protocol === 'http:' || protocol === 'https:';
}

/** The longest failure reason the front passes on to the customer. */
const MAX_REASON_LENGTH = 500;
/**
 * A header longer than this is garbage, whatever it says. Its largest honest content is the page's metadata, at most
 * MAX_METADATA_BYTES as JSON (metadataBudget.ts).
 */
export const MAX_HEADER_BYTES = 64 * 1024 + MAX_METADATA_BYTES;
/**
 * Lambda streams a response of 200 MB at most, its first 6 MB at once and the rest at 2 MB/s at most (AWS Lambda
 * developer guide, "Response streaming for Lambda functions").
 */
const LAMBDA_STREAMING = {
  maxBytes: 200_000_000,
  uncappedBytes: 6_000_000,
  bytesPerSecond: 2_000_000,
};

/**
 * The most an answer's image may weigh: above what real pages make at the largest size the spec allows (an 11,520 x
 * 16,384 full page, 3,840 px at scale 3), within what Lambda streams with its header, and far below the front's
 * memory, so a taken-over renderer cannot exhaust it. A page can still outweigh it (noise does not compress): the
 * renderer then answers the page's failure.
 */
export const MAX_ANSWER_BYTES = 190 * 1024 * 1024;

/**
 * The most an answer can weigh to reach the front's client by `until` (ms) when it starts streaming at `now`. Lambda
 * streams it twice, at its pace each time: the renderer to the front, which has the whole image before it answers
 * (its ETag, the cache), then the front to its client. An image the front was still waiting for failed as ours, free,
 * while Lambda streamed on (red team); one the front was still sending when its function timed out reached its
 * client cut, and rolled deploys back (review of the deployed stack, round 25).
 */
export function streamableBytes(now: number, until: number): number {
  const seconds = Math.max(0, until - now) / 1000;
  const legs = 2;
  return Math.min(
    LAMBDA_STREAMING.maxBytes,
    LAMBDA_STREAMING.uncappedBytes + (LAMBDA_STREAMING.bytesPerSecond * seconds) / legs,
  );
}

/** What a renderer answers for an image it cannot stream to the front in the time left: the page's failure. */
export const IMAGE_TOO_SLOW_TO_DELIVER =
  'The image is too large to deliver in the time left: capture a smaller region, a lighter format, or with less delay';

/** What a renderer answers for an output (`what`: an image, a PDF) heavier than MAX_ANSWER_BYTES: the page's failure. */
export function tooLargeToDeliver(what: string): string {
  return `The ${what} is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB, more than the service can deliver`;
}

const metadataText = z.string().max(MAX_METADATA_TEXT).nullable();
const metadataProperties = z
  .record(z.string().max(MAX_METADATA_TEXT), z.string().max(MAX_METADATA_TEXT))
  .refine((properties) => Object.keys(properties).length <= MAX_METADATA_PROPERTIES);

/** What the page said about itself, in the shape and bounds pageContent.ts gives it, and nothing else. */
const pageMetadataSchema = z
  .strictObject({
    title: metadataText,
    description: metadataText,
    lang: metadataText,
    canonicalUrl: metadataText,
    finalUrl: z.string().max(MAX_METADATA_BYTES).nullable(),
    statusCode: z.number().int().min(100).max(999).nullable(),
    favicon: metadataText,
    openGraph: metadataProperties,
    twitter: metadataProperties,
  })
  .refine((metadata) => metadataBytes(metadata) <= MAX_METADATA_BYTES);

/**
 * The header, as the front validates it: a renderer may have been taken over, so its answer is checked like any
 * other input. Fields beyond these are dropped (a newer renderer's are ignored, none reaches the result); the
 * page's metadata, which the front passes on to the customer and stores beside the image, only in its own shape.
 */
export const renderHeaderSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    /** 0 only for text: a page with no text content is empty Markdown (answerCheck.ts checks it by format). */
    size: z.number().int().min(0).max(MAX_ANSWER_BYTES),
    /**
     * What the bytes are: an image, a PDF or text (CAPTURE_CONTENT_TYPES). Only ever compared with the type of the
     * format the front asked for (answerCheck.ts): a renderer never chooses what the front serves.
     */
    contentType: z.string().min(1).max(64),
    truncated: z.boolean(),
    metadata: pageMetadataSchema.optional(),
  }),
  z.object({
    ok: z.literal(false),
    reason: z.string().min(1).max(MAX_REASON_LENGTH),
    /**
     * What kind of failure, where the front answers it differently: `timedOut` (a time budget ran out: the account's
     * slot is held a while longer), `invalid` (a field the browser refused: a 400 with these details).
     */
    kind: z.enum(['timedOut', 'invalid']).optional(),
    /** Whose fault: the customer's page, or ours (the default). Only ours counts against alarms and rollbacks. */
    fault: z.enum(['page', 'service']).optional(),
    details: z
      .array(
        z.object({
          code: z.string().max(64),
          path: z.array(z.union([z.string().max(64), z.number().int()])).max(4),
          message: z.string().max(MAX_REASON_LENGTH),
        }),
      )
      .max(64)
      .optional(),
  }),
]);
export type RenderHeader = z.infer<typeof renderHeaderSchema>;
/** A failure as it travels: the reason shown to the customer, and its kind where the front must tell them apart. */
export type RenderFailure = Extract<RenderHeader, { ok: false }>;
/** A renderer's answer once read and checked: the result with its image, or the failure it reported. */
export type RenderAnswer = { ok: true; result: CaptureResult } | RenderFailure;

const NEWLINE = 0x0a;

/** The header line of a successful capture, then the image. */
export function encodeResult(result: CaptureResult): [header: Buffer, image: Buffer] {
  const { image, ...fields } = result;
  return [headerLine({ ...fields, ok: true, size: image.length }), image];
}

export function encodeFailure(failure: Omit<RenderFailure, 'ok'>): Buffer {
  return headerLine({ ...failure, ok: false, reason: failure.reason.slice(0, MAX_REASON_LENGTH) });
}

function headerLine(header: Record<string, unknown>): Buffer {
  return Buffer.from(`${JSON.stringify(header)}\n`);
}

/** A renderer's answer that is not what the protocol says. */
export class GarbledAnswerError extends Error {}

/**
 * Gathers a streamed answer, believing nothing of it unchecked. The header line is looked for in each new chunk
 * only, so a renderer trickling bytes without a newline costs the front nothing more per chunk; the answer is
 * refused as soon as MAX_HEADER_BYTES arrived without one, and the header, with the size it announces, is validated
 * before anything more is read. The image is then copied, as it arrives, into one buffer of exactly that size (its
 * pages taken only as they are written): the front holds an answer once, not its chunks and a copy of them, and a
 * byte beyond the announced size is refused when it arrives.
 */
export class AnswerReader {
  /** The chunks before the header line's end. */
  private head: Buffer[] = [];
  private headLength = 0;
  private read: ReadAnswer | undefined;

  /** Takes the stream's next bytes; true once the whole answer has arrived (what follows is not the answer's). */
  push(chunk: Buffer): boolean {
    if (this.read) return fill(this.read, chunk);
    const start = this.headLength;
    this.head.push(chunk);
    this.headLength += chunk.length;
    const newline = chunk.indexOf(NEWLINE);
    const end = newline < 0 ? this.headLength : start + newline;
    if (end > MAX_HEADER_BYTES) throw new GarbledAnswerError('no header line');
    if (newline < 0) return false;
    const received = Buffer.concat(this.head, this.headLength);
    this.head = [];
    const header = parseHeader(received.subarray(0, end));
    // Uninitialised, and never handed out before every byte of it was written (answer()).
    this.read = { header, body: Buffer.allocUnsafe(header.ok ? header.size : 0), filled: 0 };
    return fill(this.read, received.subarray(end + 1));
  }

  /**
   * The complete answer: the validated header, and for a success the result with its image. Throws
   * GarbledAnswerError for anything else (no header line, too few bytes).
   */
  answer(): RenderAnswer {
    if (!this.read) throw new GarbledAnswerError('no header line');
    const { header, body, filled } = this.read;
    if (filled !== body.length) throw new GarbledAnswerError(`expected ${body.length} bytes, got ${filled}`);
    if (!header.ok) return header;
    const { ok: _ok, size: _size, ...fields } = header;
    return { ok: true, result: { ...fields, image: body } };
  }
}

/** An answer whose header line has arrived: the validated header, and the image as far as it has been read. */
interface ReadAnswer {
  header: RenderHeader;
  body: Buffer;
  filled: number;
}

/** Copies the next bytes of the image; true once it is whole. */
function fill(read: ReadAnswer, bytes: Buffer): boolean {
  if (read.filled + bytes.length > read.body.length) {
    throw new GarbledAnswerError(read.header.ok ? 'more bytes than announced' : 'a failure carries bytes');
  }
  bytes.copy(read.body, read.filled);
  read.filled += bytes.length;
  return read.filled === read.body.length;
}

/** Reads an answer received whole (AnswerReader.answer). */
export function decodeAnswer(answer: Buffer): RenderAnswer {
  const reader = new AnswerReader();
  reader.push(answer);
  return reader.answer();
}

function parseHeader(line: Buffer): RenderHeader {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line.toString('utf8'));
  } catch {
    throw new GarbledAnswerError('the header is not JSON');
  }
  const header = renderHeaderSchema.safeParse(parsed);
  if (!header.success) throw new GarbledAnswerError('the header does not match the protocol');
  return header.data;
}
