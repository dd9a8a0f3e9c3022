/**
 * One copy of each stored object's bytes while anything still holds it. An answer holds its bytes until its client
 * has taken the last of them, and a client may stop reading: visitors of a cached image (a signed link's hits are
 * free) each held a copy of up to 190 MiB for as long as they kept their connections open (red team, round 17). A
 * read of an object version already held somewhere gives back that copy, and the one just read is garbage at once.
 * Only weak references are kept: the copies live exactly as long as their last holder.
 */
export class HeldCopies {
  private readonly copies = new Map<string, { version: string; bytes: WeakRef<Buffer> }>();
  private readonly forgotten = new FinalizationRegistry<string>((key) => {
    // A newer version's copy may have taken the key meanwhile: only a copy that is gone is forgotten.
    if (this.copies.get(key)?.bytes.deref() === undefined) this.copies.delete(key);
  });

  /** The copy of `key`'s `version` (an ETag: the same bytes) already held, else `bytes`, held from now on. */
  share(key: string, version: string, bytes: Buffer): Buffer {
    const held = this.copies.get(key);
    const copy = held?.version === version ? held.bytes.deref() : undefined;
    if (copy && copy.length === bytes.length) return copy;
    this.copies.set(key, { version, bytes: new WeakRef(bytes) });
    this.forgotten.register(bytes, key);
    return bytes;
  }
}
