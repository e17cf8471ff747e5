import type { ToolCallOutputContent } from '@openai/agents';
import type { ToolContent, ToolResult } from '@ws/core';

/** What a function tool of the OpenAI Agents SDK returns: text, or text, images and files. */
export type OpenAiToolOutput = string | ToolCallOutputContent[];

/**
 * Maps a successful {@link ToolResult} onto the SDK's tool output: a plain string when the result is
 * all text, otherwise a list of the SDK's structured outputs (`text`, `image` with base64 data and
 * its media type, `file` for embedded documents such as PDFs), which the SDK sends to the model as
 * `input_text` / `input_image` / `input_file`. Audio and resource links, which tool outputs cannot
 * carry, become a line of text that names them.
 */
export function toToolOutput(result: ToolResult): OpenAiToolOutput {
  if (result.content.every((item) => item.type === 'text')) return joinText(result.content);
  return result.content.map(toOutputContent);
}

/**
 * The text an error result shows the model: its content as text, starting with `Error:` so that it
 * reads as a failure even when the tool (an MCP server, say) did not say so.
 */
export function toErrorText(result: ToolResult): string {
  const text = joinText(result.content).trim();
  if (text === '') return 'Error: the tool failed without saying why';
  return /^error\b/i.test(text) ? text : `Error: ${text}`;
}

function joinText(content: readonly ToolContent[]): string {
  return content.map(describe).join('\n');
}

function toOutputContent(item: ToolContent): ToolCallOutputContent {
  switch (item.type) {
    case 'image':
      return { type: 'image', image: { data: item.data, mediaType: item.mimeType } };
    case 'resource':
      return {
        type: 'file',
        file: {
          data: item.resource.blob,
          mediaType: item.resource.mimeType,
          filename: basename(item.resource.uri),
        },
      };
    default:
      return { type: 'text', text: describe(item) };
  }
}

// One item as text: text as it is, anything else as a line that says what it is and where.
function describe(item: ToolContent): string {
  switch (item.type) {
    case 'text':
      return item.text;
    case 'image':
      return `[image ${item.mimeType}, ${approximateBytes(item.data)} bytes]`;
    case 'audio':
      return `[audio ${item.mimeType}, ${approximateBytes(item.data)} bytes: tool outputs cannot carry audio]`;
    case 'resource_link': {
      const details = [item.mimeType, item.description].filter(Boolean).join(', ');
      return `[resource ${item.name}: ${item.uri}${details ? ` (${details})` : ''}]`;
    }
    case 'resource':
      return `[document ${item.resource.uri} (${item.resource.mimeType})]`;
  }
}

function approximateBytes(base64: string): number {
  return Math.floor((base64.replace(/=+$/, '').length * 3) / 4);
}

function basename(uri: string): string {
  const path = uri.split(/[?#]/)[0] ?? '';
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name === '' ? 'document' : decodeURIComponentSafe(name);
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
