import { z } from 'zod';
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

/** What the renderer accepts: a spec object (the front has validated every field) and a deadline. */
export const renderRequestSchema = z.object({
  spec: z.looseObject({ url: z.string().min(1) }),
  deadline: z.number().int().positive(),
});

/** The longest failure reason the front passes on to the customer. */
const MAX_REASON_LENGTH = 500;
/**
 * A header longer than this is garbage, whatever it says. Its largest honest content is the page's metadata, which
 * the page controls within the bounds of renderer.ts (applied in pageContent.ts): two objects of MAX_METADATA_PROPERTIES keys and values and a
 * few more strings, each at most MAX_METADATA_TEXT characters (up to 6 bytes each once escaped as JSON), and the
 * final URL, up to Chromium's 2 MiB.
 */
const METADATA_STRINGS = 2 * 2 * MAX_METADATA_PROPERTIES + 8;
export const MAX_HEADER_BYTES = 64 * 1024 + METADATA_STRINGS * MAX_METADATA_TEXT * 6 + 2 * 1024 * 1024;

/**
 * The header, as the front validates it: a renderer may have been taken over, so its answer is checked like any
 * other input. Fields beyond these (those of newer outputs) pass through to the result.
 */
export const renderHeaderSchema = z.discriminatedUnion('ok', [
  z.looseObject({
    ok: z.literal(true),
    size: z.number().int().min(1),
    /** What the bytes are: an image, a PDF or text (CAPTURE_CONTENT_TYPES). */
    contentType: z.string().min(1).max(64),
    truncated: z.boolean(),
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

const NEWLINE = 0x0a;

/** The header line of a successful capture, then the image. */
export function encodeResult(result: CaptureResult): Buffer[] {
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
 * Reads a complete answer: the validated header, and for a success the result with its image. Throws
 * GarbledAnswerError for anything else (no header line, a header that fails validation, too few or too many bytes).
 */
export function decodeAnswer(answer: Buffer): { ok: true; result: CaptureResult } | RenderFailure {
  const end = answer.indexOf(NEWLINE);
  if (end < 0 || end > MAX_HEADER_BYTES) throw new GarbledAnswerError('no header line');
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.subarray(0, end).toString('utf8'));
  } catch {
    throw new GarbledAnswerError('the header is not JSON');
  }
  const header = renderHeaderSchema.safeParse(parsed);
  if (!header.success) throw new GarbledAnswerError('the header does not match the protocol');
  const body = answer.subarray(end + 1);
  if (!header.data.ok) {
    if (body.length > 0) throw new GarbledAnswerError('a failure carries bytes');
    return header.data;
  }
  const { ok: _ok, size, ...fields } = header.data;
  if (body.length !== size) throw new GarbledAnswerError(`expected ${size} bytes, got ${body.length}`);
  return { ok: true, result: { ...fields, image: body } };
}

/** How many bytes a complete answer has, once its header line has arrived; undefined until then. */
export function expectedLength(received: Buffer): number | undefined {
  const end = received.indexOf(NEWLINE);
  if (end < 0) return undefined;
  try {
    const header = JSON.parse(received.subarray(0, end).toString('utf8')) as { size?: unknown };
    return end + 1 + (typeof header.size === 'number' ? header.size : 0);
  } catch {
    return undefined;
  }
}
