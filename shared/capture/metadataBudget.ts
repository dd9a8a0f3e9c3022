import type { PageMetadata } from './renderer';

/**
 * The most one capture's page metadata weighs as JSON (UTF-8 bytes). Views of many jobs carry each job's metadata
 * whole (a batch of 100, a list of 50, the batch.completed webhook), and a buffered Lambda answer must stay within
 * 6 MB after the runtime escapes its JSON body once more (up to twice the bytes): 100 jobs of 16 KiB of metadata and
 * a few KiB of other fields each keep well inside it. Honest pages say a few KiB at most.
 */
export const MAX_METADATA_BYTES = 16 * 1024;

/** The strings a page writes itself, shortened (heaviest first) when even without its properties it says too much. */
const TEXT_FIELDS = ['title', 'description', 'lang', 'canonicalUrl', 'favicon'] as const;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

export function metadataBytes(metadata: PageMetadata): number {
  return jsonBytes(metadata);
}

/**
 * The metadata within MAX_METADATA_BYTES; unchanged when it already is. A page that says more loses, in this order:
 * the properties that do not fit (`openGraph` is kept before `twitter`, each in the page's order, so the last go
 * first), then, should the other fields alone be too heavy, half of its heaviest string at a time, and last the
 * final URL (null: a URL cut short would name another page).
 */
export function withinMetadataBudget(metadata: PageMetadata): PageMetadata {
  if (metadataBytes(metadata) <= MAX_METADATA_BYTES) return metadata;
  const fitted: PageMetadata = { ...metadata, openGraph: {}, twitter: {} };
  while (metadataBytes(fitted) > MAX_METADATA_BYTES) {
    const heaviest = heaviestText(fitted);
    if (heaviest) fitted[heaviest] = halved(fitted[heaviest] as string);
    else fitted.finalUrl = null;
  }
  let room = MAX_METADATA_BYTES - metadataBytes(fitted);
  for (const group of ['openGraph', 'twitter'] as const) {
    for (const [key, value] of Object.entries(metadata[group])) {
      // "key":"value", and the comma before it unless it is the object's first.
      const entry = jsonBytes(key) + 1 + jsonBytes(value) + (Object.keys(fitted[group]).length ? 1 : 0);
      if (entry > room) return fitted;
      fitted[group][key] = value;
      room -= entry;
    }
  }
  return fitted;
}

function heaviestText(metadata: PageMetadata): (typeof TEXT_FIELDS)[number] | undefined {
  let heaviest: (typeof TEXT_FIELDS)[number] | undefined;
  let most = 0;
  for (const field of TEXT_FIELDS) {
    const bytes = metadata[field] ? jsonBytes(metadata[field]) : 0;
    if (bytes > most) [heaviest, most] = [field, bytes];
  }
  return heaviest;
}

/** The first half of a string, never ending inside a surrogate pair; null once nothing is left. */
function halved(text: string): string | null {
  let end = Math.floor(text.length / 2);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return end > 0 ? text.slice(0, end) : null;
}
