import type { Tool, ToolResult } from '@ws/core';
import { expect } from 'vitest';
import type { WorkspaceUnderTest } from './target.js';

/** A 1×1 PNG. */
export const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

/**
 * A valid PDF with `pages` pages; page i shows the text `Page i text`. Built by hand (objects,
 * cross-reference table with exact byte offsets) so the suite needs no PDF library.
 */
export function makePdf(pages: number): Uint8Array {
  const objects: string[] = [];
  const fontId = 3 + pages * 2;
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  const kids = Array.from({ length: pages }, (_, index) => `${3 + index * 2} 0 R`).join(' ');
  objects[2] = `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`;
  for (let index = 0; index < pages; index++) {
    const pageId = 3 + index * 2;
    const content = `BT /F1 24 Tf 72 700 Td (Page ${index + 1} text) Tj ET`;
    objects[pageId] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${pageId + 1} 0 R /Resources << /Font << /F1 ${fontId} 0 R >> >> >>`;
    objects[pageId + 1] = `<< /Length ${content.length} >>\nstream\n${content}\nendstream`;
  }
  objects[fontId] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = body.length;
    body += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xrefAt = body.length;
  body += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) body += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return new TextEncoder().encode(body);
}

/** Finds a tool by name. */
export async function toolNamed(workspace: WorkspaceUnderTest, name: string): Promise<Tool> {
  const tool = (await workspace.listTools()).find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool named ${name}`);
  return tool;
}

/** The concatenated text items of a result. */
export function textOf(result: ToolResult): string {
  return result.content.map((item) => (item.type === 'text' ? item.text : '')).join('');
}

/** Asserts a successful result and returns its text. */
export function okText(result: ToolResult): string {
  expect(result.isError, textOf(result)).toBe(false);
  return textOf(result);
}

/** Asserts an error result and returns its text. */
export function errorText(result: ToolResult): string {
  expect(result.isError, `expected an error result, got: ${textOf(result)}`).toBe(true);
  return textOf(result);
}
