import { crc32 } from 'node:zlib';

/** The AWS event stream's header value type for strings. */
const STRING_TYPE = 7;
/** Total length, headers' length, and the prelude's CRC32. */
const PRELUDE_BYTES = 12;
const CRC_BYTES = 4;

/** Headers as the event stream encodes them: name length, name, value type, value length, value. */
function encodeHeaders(headers: Record<string, string>): Buffer {
  return Buffer.concat(
    Object.entries(headers).map(([name, value]) => {
      const nameBytes = Buffer.from(name);
      const valueBytes = Buffer.from(value);
      const fixed = Buffer.alloc(1 + nameBytes.length + 3);
      fixed.writeUInt8(nameBytes.length, 0);
      nameBytes.copy(fixed, 1);
      fixed.writeUInt8(STRING_TYPE, 1 + nameBytes.length);
      fixed.writeUInt16BE(valueBytes.length, 2 + nameBytes.length);
      return Buffer.concat([fixed, valueBytes]);
    }),
  );
}

/**
 * One message of the AWS event stream encoding (application/vnd.amazon.eventstream), as Lambda sends the events of
 * InvokeWithResponseStream: total and header lengths, the prelude's CRC32, string headers, the payload, and the
 * whole message's CRC32. Built in one buffer, the payload copied once: an image's bytes pass through here.
 */
function eventStreamMessage(encodedHeaders: Buffer, payload: Buffer): Buffer {
  const total = PRELUDE_BYTES + encodedHeaders.length + payload.length + CRC_BYTES;
  const message = Buffer.allocUnsafe(total);
  message.writeUInt32BE(total, 0);
  message.writeUInt32BE(encodedHeaders.length, 4);
  message.writeUInt32BE(crc32(message.subarray(0, 8)), 8);
  encodedHeaders.copy(message, PRELUDE_BYTES);
  payload.copy(message, PRELUDE_BYTES + encodedHeaders.length);
  const body = total - CRC_BYTES;
  message.writeUInt32BE(crc32(message.subarray(0, body)), body);
  return message;
}

/** Every event of a kind carries the same headers: encoded once. */
const PAYLOAD_CHUNK_HEADERS = encodeHeaders({
  ':event-type': 'PayloadChunk',
  ':message-type': 'event',
  ':content-type': 'application/octet-stream',
});
const INVOKE_COMPLETE_HEADERS = encodeHeaders({
  ':event-type': 'InvokeComplete',
  ':message-type': 'event',
  ':content-type': 'application/json',
});

/** A PayloadChunk event: bytes the function wrote to its response stream. */
export function payloadChunk(bytes: Buffer): Buffer {
  return eventStreamMessage(PAYLOAD_CHUNK_HEADERS, bytes);
}

/** The InvokeComplete event that closes the stream; `errorCode` when the function failed. */
export function invokeComplete(errorCode?: string): Buffer {
  return eventStreamMessage(
    INVOKE_COMPLETE_HEADERS,
    Buffer.from(JSON.stringify(errorCode ? { ErrorCode: errorCode, ErrorDetails: 'Unhandled' } : {})),
  );
}
