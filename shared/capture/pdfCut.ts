import { PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, type PDFRef, PDFString } from 'pdf-lib';

/**
 * A printed document cut to its first `count` pages, written anew: the kept pages are copied into a new file with
 * what they use (pdf-lib follows each page's references, never its parent's), so nothing that only a dropped page
 * used (its drawing, its images) is left in the file or weighs on it. Kept with them: the document's information
 * (title, creator, producer, dates), its language, the viewer's use of the title, and the named destinations of
 * internal links that lead to a kept page. Dropped: the tagged structure, whose tree reaches every page (a cut
 * document is untagged, and its pages and links name no place in a tree). Fonts are shared by every page, so their
 * subsets still hold the glyphs a dropped page drew.
 */
export async function firstPagesOf(pdf: Buffer, count: number): Promise<Buffer> {
  const source = await PDFDocument.load(pdf, { updateMetadata: false });
  const cut = await PDFDocument.create({ updateMetadata: false });
  const copies = await cut.copyPages(source, source.getPageIndices().slice(0, count));
  // Each kept page's reference in the print, to its copy's: what a named destination is moved to.
  const moved = new Map<PDFRef, PDFRef>();
  copies.forEach((copy, index) => {
    cut.addPage(copy);
    moved.set(source.getPage(index).ref, copy.ref);
    for (const key of ['StructParents', 'Tabs']) copy.node.delete(PDFName.of(key));
    for (const annotation of copy.node.Annots()?.asArray() ?? [])
      cut.context.lookupMaybe(annotation, PDFDict)?.delete(PDFName.of('StructParent'));
  });
  copyInformation(source, cut);
  const dests = source.catalog.lookupMaybe(PDFName.of('Dests'), PDFDict);
  if (dests) {
    const leading = cut.context.obj({});
    for (const [name, value] of dests.entries()) {
      const destination = source.context.lookupMaybe(value, PDFArray);
      const page = destination?.get(0);
      const to = page === undefined ? undefined : moved.get(page as PDFRef);
      // Only plain values follow the page (a view's name and coordinates): nothing else of the source comes along.
      if (!destination || !to) continue;
      leading.set(
        name,
        cut.context.obj([
          to,
          ...destination
            .asArray()
            .slice(1)
            .map((part) => part.clone()),
        ]),
      );
    }
    cut.catalog.set(PDFName.of('Dests'), cut.context.register(leading));
  }
  return Buffer.from(await cut.save({ useObjectStreams: false, addDefaultPage: false }));
}

/** The document information dictionary's fields, the language and whether a viewer shows the title. */
function copyInformation(source: PDFDocument, cut: PDFDocument): void {
  const title = source.getTitle();
  if (title !== undefined) {
    const shown = source.catalog.getViewerPreferences()?.getDisplayDocTitle() ?? false;
    cut.setTitle(title, { showInWindowTitleBar: shown });
  }
  const creator = source.getCreator();
  if (creator !== undefined) cut.setCreator(creator);
  const producer = source.getProducer();
  if (producer !== undefined) cut.setProducer(producer);
  const created = source.getCreationDate();
  if (created) cut.setCreationDate(created);
  const modified = source.getModificationDate();
  if (modified) cut.setModificationDate(modified);
  const language = source.catalog.lookupMaybe(PDFName.of('Lang'), PDFString, PDFHexString);
  if (language) cut.catalog.set(PDFName.of('Lang'), language.clone());
}
