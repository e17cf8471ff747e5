import type { ToolContent, ToolResult } from '@ws/core';
import type { ToolResultPart } from 'ai';

/** What a tool result becomes for the model: the AI SDK's `ToolResultOutput`. */
export type AiSdkToolOutput = ToolResultPart['output'];

type ContentOutput = Extract<AiSdkToolOutput, { type: 'content' }>;
type ContentOutputPart = ContentOutput['value'][number];

/**
 * Maps a workspace tool result onto what the AI SDK sends the model (a tool's `toModelOutput`):
 * - a failed call (`isError`) becomes `{ type: 'error-text' }`, so the model sees an error, not a
 *   JSON object that looks like a success;
 * - a result of text only becomes `{ type: 'text' }`, its items joined by newlines;
 * - a result with media becomes `{ type: 'content' }`: images as `image-data`, audio and embedded
 *   documents (a PDF page set) as `file-data`, links to resources as a line of text naming the link.
 * Pure; never throws for a well-formed result.
 */
export function toAiSdkToolOutput(result: ToolResult): AiSdkToolOutput {
  if (result.isError) {
    return { type: 'error-text', value: result.content.map(describe).join('\n') || 'The tool call failed.' };
  }
  if (result.content.every((item) => item.type === 'text')) {
    return { type: 'text', value: result.content.map(describe).join('\n') };
  }
  return { type: 'content', value: result.content.map(toPart) };
}

function toPart(item: ToolContent): ContentOutputPart {
  switch (item.type) {
    case 'text':
      return { type: 'text', text: item.text };
    case 'image':
      return { type: 'image-data', data: item.data, mediaType: item.mimeType };
    case 'audio':
      return { type: 'file-data', data: item.data, mediaType: item.mimeType };
    case 'resource':
      return {
        type: 'file-data',
        data: item.resource.blob,
        mediaType: item.resource.mimeType,
        filename: fileName(item.resource.uri),
      };
    default:
      return { type: 'text', text: describe(item) };
  }
}

// Text for the model where a part cannot be sent as it is (an error's media, a workspace link).
function describe(item: ToolContent): string {
  switch (item.type) {
    case 'text':
      return item.text;
    case 'resource_link':
      return `[${item.name}](${item.uri})${item.mimeType ? ` ${item.mimeType}` : ''}${
        item.description ? `: ${item.description}` : ''
      }`;
    case 'resource':
      return `[${fileName(item.resource.uri)}](${item.resource.uri}) ${item.resource.mimeType}`;
    default:
      return `[${item.type} ${item.mimeType}]`;
  }
}

function fileName(uri: string): string {
  const path = uri.split(/[?#]/)[0] ?? uri;
  return path.slice(path.lastIndexOf('/') + 1) || uri;
}
