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
  const document = await openPdf(data);
  try {
    // pdf.js counts pages from 0 here; a pair is an inclusive range.
    return await document.extractPages([{ document: null, includePages: [[first - 1, last - 1]] }]);
  } catch (error) {
    throw new WsError(
      'INVALID_ARGUMENT',
      `The PDF could not be split: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    await document.destroy();
  }
}

async function openPdf(data: Uint8Array) {
  // unpdf carries a dependency-free build of pdf.js; it is loaded on the first PDF, never before.
  const { getDocumentProxy } = await import('unpdf');
  try {
    // pdf.js takes ownership of the buffer it is given and refuses Buffers: hand it a plain copy.
    return await getDocumentProxy(new Uint8Array(data), {
      isEvalSupported: false,
      disableFontFace: true,
      useSystemFonts: false,
      verbosity: 0,
    });
  } catch (error) {
    throw new WsError(
      'INVALID_ARGUMENT',
      `The file is not a readable PDF: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
