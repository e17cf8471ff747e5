import type { ContentBlock } from '@langchain/core/messages';
import type { ToolContent, ToolResult } from '@ws/core';

/**
 * What a `ToolMessage` carries for a workspace tool result, in LangChain's standard content blocks:
 * a plain string when the result is text only (every provider takes that), otherwise text, `image`,
 * `audio` and `file` blocks with base64 `data` and a `mimeType`. A `resource_link` becomes a line of
 * text naming the file: a `workspace:///` URL is nothing a provider could fetch.
 */
export function toolResultContent(result: ToolResult): string | ContentBlock[] {
  if (result.content.every((item) => item.type === 'text')) {
    return result.content.map((item) => (item.type === 'text' ? item.text : '')).join('\n');
  }
  return result.content.map(contentBlock);
}

function contentBlock(item: ToolContent): ContentBlock {
  switch (item.type) {
    case 'text':
      return { type: 'text', text: item.text };
    case 'image':
      return { type: 'image', data: item.data, mimeType: item.mimeType };
    case 'audio':
      return { type: 'audio', data: item.data, mimeType: item.mimeType };
    case 'resource': {
      const { uri, mimeType, blob } = item.resource;
      const filename = uri.slice(uri.lastIndexOf('/') + 1);
      return { type: 'file', data: blob, mimeType, metadata: { filename, uri } };
    }
    case 'resource_link': {
      const details = [item.mimeType, item.description].filter(Boolean).join(', ');
      return { type: 'text', text: `[${item.name}](${item.uri})${details ? ` (${details})` : ''}` };
    }
  }
}
