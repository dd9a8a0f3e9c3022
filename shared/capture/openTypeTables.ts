/** A table of an OpenType font, as its table directory describes it. */
interface TableRecord {
  tag: string;
  checksum: number;
  offset: number;
  length: number;
}

const OFFSET_TABLE_BYTES = 12;
const TABLE_RECORD_BYTES = 16;
/** Where `checkSumAdjustment` sits in the `head` table. */
const CHECKSUM_ADJUSTMENT_AT = 8;
const CHECKSUM_MAGIC = 0xb1b0afba;

/**
 * A copy of an OpenType font (TrueType or CFF outlines; not a collection) without the tables named in `drop`. The
 * other tables are copied byte for byte, so their checksums stand; the directory and the whole-font checksum in
 * `head` are rebuilt.
 */
export function withoutTables(font: Buffer, drop: readonly string[]): Buffer {
  const kept = tableRecords(font).filter((table) => !drop.includes(table.tag));
  const directoryBytes = OFFSET_TABLE_BYTES + TABLE_RECORD_BYTES * kept.length;
  const out = Buffer.alloc(kept.reduce((size, table) => size + padded(table.length), directoryBytes));

  // The offset table: the same sfnt version, and the binary-search fields the spec derives from the table count.
  const entrySelector = Math.floor(Math.log2(kept.length));
  const searchRange = TABLE_RECORD_BYTES * 2 ** entrySelector;
  out.writeUInt32BE(font.readUInt32BE(0), 0);
  out.writeUInt16BE(kept.length, 4);
  out.writeUInt16BE(searchRange, 6);
  out.writeUInt16BE(entrySelector, 8);
  out.writeUInt16BE(TABLE_RECORD_BYTES * kept.length - searchRange, 10);

  let offset = directoryBytes;
  let headAt: number | undefined;
  kept.forEach((table, index) => {
    const record = OFFSET_TABLE_BYTES + TABLE_RECORD_BYTES * index;
    out.write(table.tag, record, 'latin1');
    out.writeUInt32BE(table.checksum, record + 4);
    out.writeUInt32BE(offset, record + 8);
    out.writeUInt32BE(table.length, record + 12);
    font.copy(out, offset, table.offset, table.offset + table.length);
    if (table.tag === 'head') headAt = offset;
    offset += padded(table.length);
  });

  if (headAt !== undefined) {
    out.writeUInt32BE(0, headAt + CHECKSUM_ADJUSTMENT_AT);
    out.writeUInt32BE((CHECKSUM_MAGIC - checksum(out)) >>> 0, headAt + CHECKSUM_ADJUSTMENT_AT);
  }
  return out;
}

/** The tags of a font's tables, in directory order. */
export function tableTags(font: Buffer): string[] {
  return tableRecords(font).map((table) => table.tag);
}

/** The sum of a font's (or table's) big-endian 32-bit words, as OpenType checksums are computed. */
export function checksum(data: Buffer): number {
  let sum = 0;
  for (let at = 0; at < data.length; at += 4) {
    const word = at + 4 <= data.length ? data.readUInt32BE(at) : tailWord(data, at);
    sum = (sum + word) >>> 0;
  }
  return sum;
}

function tableRecords(font: Buffer): TableRecord[] {
  const version = font.readUInt32BE(0);
  if (version !== 0x00010000 && font.toString('latin1', 0, 4) !== 'OTTO') {
    throw new Error('not a single OpenType font (TrueType or CFF)');
  }
  return Array.from({ length: font.readUInt16BE(4) }, (_, index) => {
    const at = OFFSET_TABLE_BYTES + TABLE_RECORD_BYTES * index;
    return {
      tag: font.toString('latin1', at, at + 4),
      checksum: font.readUInt32BE(at + 4),
      offset: font.readUInt32BE(at + 8),
      length: font.readUInt32BE(at + 12),
    };
  });
}

/** Tables start on 4-byte boundaries. */
function padded(length: number): number {
  return (length + 3) & ~3;
}

function tailWord(data: Buffer, at: number): number {
  const word = Buffer.alloc(4);
  data.copy(word, 0, at);
  return word.readUInt32BE(0);
}
