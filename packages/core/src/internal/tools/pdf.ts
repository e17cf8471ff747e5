import { WsError } from '../../contracts/errors.js';

/** A PDF longer than this needs `pages` to be read. */
export const PDF_MAX_PAGES_WITHOUT_RANGE = 10;
/** The most pages one Read returns. */
export const PDF_MAX_PAGES_PER_READ = 20;

/** The page count of a PDF. */
export async function pdfPageCount(data: Uint8Array): Promise<number> {
  const document = await openPdf(data);
  try {
    return document.numPages;
  } finally {
    await document.destroy();
  }
}

/** The text of pages `first..last` (1-based, inclusive), one string per page. */
export async function pdfPageTexts(data: Uint8Array, first: number, last: number): Promise<string[]> {
  const document = await openPdf(data);
  try {
    const texts: string[] = [];
    for (let number = first; number <= last; number++) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if (!('str' in item)) continue;
        text += item.str;
        if (item.hasEOL) text += '\n';
      }
      texts.push(text.trimEnd());
      page.cleanup();
    }
    return texts;
  } finally {
    await document.destroy();
  }
}

/** A new PDF holding pages `first..last` (1-based, inclusive) of `data`. */
export async function pdfSlice(data: Uint8Array, first: number, last: number): Promise<Uint8Array> {
  const { PDFDocument } = await import('pdf-lib');
  try {
    const source = await PDFDocument.load(data, { ignoreEncryption: true });
    const target = await PDFDocument.create();
    const indices = Array.from({ length: last - first + 1 }, (_, index) => first - 1 + index);
    for (const page of await target.copyPages(source, indices)) target.addPage(page);
    return await target.save();
  } catch (error) {
    throw new WsError(
      'INVALID_ARGUMENT',
      `The PDF could not be split: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

async function openPdf(data: Uint8Array) {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  try {
    // pdf.js takes ownership of the buffer it is given and refuses Buffers: hand it a plain copy.
    return await pdfjs.getDocument({
      data: new Uint8Array(data),
      isEvalSupported: false,
      disableFontFace: true,
      useSystemFonts: false,
      verbosity: 0,
    }).promise;
  } catch (error) {
    throw new WsError(
      'INVALID_ARGUMENT',
      `The file is not a readable PDF: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
