import { crc32 } from 'node:zlib';

/** The AWS event stream's header value type for strings. */
const STRING_TYPE = 7;

/**
 * One message of the AWS event stream encoding (application/vnd.amazon.eventstream), as Lambda sends the events of
 * InvokeWithResponseStream: total and header lengths, the prelude's CRC32, string headers, the payload, and the
 * whole message's CRC32.
 */
export function eventStreamMessage(headers: Record<string, string>, payload: Buffer): Buffer {
  const encodedHeaders = Buffer.concat(
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
  const total = 12 + encodedHeaders.length + payload.length + 4;
  const prelude = Buffer.alloc(12);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(encodedHeaders.length, 4);
  prelude.writeUInt32BE(crc32(prelude.subarray(0, 8)), 8);
  const body = Buffer.concat([prelude, encodedHeaders, payload]);
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32BE(crc32(body), 0);
  return Buffer.concat([body, trailer]);
}

/** A PayloadChunk event: bytes the function wrote to its response stream. */
export function payloadChunk(bytes: Buffer): Buffer {
  return eventStreamMessage(
    { ':event-type': 'PayloadChunk', ':message-type': 'event', ':content-type': 'application/octet-stream' },
    bytes,
  );
}

/** The InvokeComplete event that closes the stream; `errorCode` when the function failed. */
export function invokeComplete(errorCode?: string): Buffer {
  return eventStreamMessage(
    { ':event-type': 'InvokeComplete', ':message-type': 'event', ':content-type': 'application/json' },
    Buffer.from(JSON.stringify(errorCode ? { ErrorCode: errorCode, ErrorDetails: 'Unhandled' } : {})),
  );
}
