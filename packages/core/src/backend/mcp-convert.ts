import type { ToolContent, ToolResult } from '../contracts/tool.js';

type McpContentItem = Record<string, unknown> & { type?: unknown };

/**
 * Maps an MCP `CallToolResult` onto a {@link ToolResult}: text, image, audio, resource links and
 * embedded resources pass through (an embedded text resource becomes text); `structuredContent` goes
 * to `metadata`.
 */
export function toolResultFromMcp(result: unknown): ToolResult {
  const record = (typeof result === 'object' && result !== null ? result : {}) as Record<string, unknown>;
  const items = Array.isArray(record.content) ? (record.content as McpContentItem[]) : [];
  const content: ToolContent[] = [];
  for (const item of items) {
    if (item.type === 'text' && typeof item.text === 'string')
      content.push({ type: 'text', text: item.text });
    else if (
      (item.type === 'image' || item.type === 'audio') &&
      typeof item.data === 'string' &&
      typeof item.mimeType === 'string'
    ) {
      content.push({ type: item.type, data: item.data, mimeType: item.mimeType });
    } else if (item.type === 'resource_link' && typeof item.uri === 'string') {
      content.push({
        type: 'resource_link',
        uri: item.uri,
        name: typeof item.name === 'string' ? item.name : item.uri,
        ...(typeof item.mimeType === 'string' ? { mimeType: item.mimeType } : {}),
        ...(typeof item.description === 'string' ? { description: item.description } : {}),
      });
    } else if (item.type === 'resource' && typeof item.resource === 'object' && item.resource !== null) {
      const resource = item.resource as Record<string, unknown>;
      if (typeof resource.text === 'string') content.push({ type: 'text', text: resource.text });
      else if (typeof resource.blob === 'string') {
        content.push({
          type: 'resource',
          resource: {
            uri: String(resource.uri ?? ''),
            mimeType: String(resource.mimeType ?? 'application/octet-stream'),
            blob: resource.blob,
          },
        });
      }
    }
  }
  if (content.length === 0 && 'toolResult' in record)
    content.push({ type: 'text', text: JSON.stringify(record.toolResult) });
  const metadata =
    record.structuredContent !== undefined ? { structuredContent: record.structuredContent } : undefined;
  return { content, isError: record.isError === true, ...(metadata ? { metadata } : {}) };
}
