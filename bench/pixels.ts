import sharp from 'sharp';

/** Number of pixels whose RGBA differs between two images of the same size (any format sharp decodes). */
export async function differingPixels(a: Buffer, b: Buffer): Promise<number> {
  const [x, y] = await Promise.all(
    [a, b].map((image) => sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true })),
  );
  if (!x || !y || x.info.width !== y.info.width || x.info.height !== y.info.height)
    return Number.POSITIVE_INFINITY;
  let differing = 0;
  for (let i = 0; i < x.data.length; i += 4) {
    if (x.data.readUInt32LE(i) !== y.data.readUInt32LE(i)) differing++;
  }
  return differing;
}
