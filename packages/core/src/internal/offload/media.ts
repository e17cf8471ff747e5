/**
 * Recognising base64 media inside messages of the common agent SDKs, so offloading can move the
 * bytes to `data/` and leave a `workspace:///data/<name>` reference behind.
 */

/** The URL scheme of offloaded data: `workspace:///data/<sha256><ext>`. */
export const WORKSPACE_URL_PREFIX = 'workspace:///';

// File extensions by media type, as Python's mimetypes.guess_extension answers for the common ones
// (so a directory written here matches one written by AgentScope); anything else is `.bin`.
const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': '.png',
  'image/jpeg': '.jpg',
  'image/gif': '.gif',
  'image/webp': '.webp',
  'image/bmp': '.bmp',
  'image/tiff': '.tiff',
  'image/svg+xml': '.svg',
  'image/vnd.microsoft.icon': '.ico',
  'image/x-icon': '.ico',
  'image/heic': '.heic',
  'image/avif': '.avif',
  'audio/mpeg': '.mp3',
  'audio/x-wav': '.wav',
  'audio/wav': '.wav',
  'audio/ogg': '.oga',
  'audio/flac': '.flac',
  'audio/aac': '.aac',
  'audio/mp4': '.m4a',
  'audio/webm': '.weba',
  'video/mp4': '.mp4',
  'video/webm': '.webm',
  'video/quicktime': '.mov',
  'video/mpeg': '.mpeg',
  'text/plain': '.txt',
  'text/html': '.html',
  'text/css': '.css',
  'text/csv': '.csv',
  'text/markdown': '.md',
  'text/xml': '.xml',
  'application/json': '.json',
  'application/xml': '.xml',
  'application/pdf': '.pdf',
  'application/zip': '.zip',
  'application/gzip': '.gz',
  'application/x-tar': '.tar',
  'application/octet-stream': '.bin',
  'application/javascript': '.js',
  'text/javascript': '.js',
};

/** The extension offloaded data of `mediaType` gets (`.bin` when unknown). */
export function extensionFor(mediaType: string): string {
  const base = mediaType.split(';')[0]?.trim().toLowerCase() ?? '';
  return EXTENSIONS[base] ?? '.bin';
}

/** A `data:<type>;base64,<data>` URL split into its parts, or undefined. */
export function parseDataUrl(value: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]*)((?:;[^;,=]+=[^;,]*)*);base64,(.*)$/s.exec(value);
  if (!match) return undefined;
  return { mediaType: match[1] || 'application/octet-stream', data: match[3]! };
}

/** One base64 payload found in a message, and how to put the reference back in its place. */
export interface MediaHit {
  /** The base64 text (not decoded). */
  readonly data: string;
  readonly mediaType: string;
  readonly name?: string | undefined;
  /** Returns the node rewritten to point at `url` instead of carrying the bytes. */
  replace(url: string): unknown;
}

type Node = Record<string, unknown>;

const isObject = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * Recognises one node as base64 media of a known shape:
 * - AgentScope `DataBlock`: `{type:'data', source:{type:'base64', data, media_type}}`;
 * - Anthropic base64 sources: `{type:'image'|'document', source:{type:'base64', data, media_type}}`;
 * - MCP image/audio content: `{type:'image'|'audio', data, mimeType}` (becomes a `resource_link`);
 * - Vercel AI SDK parts: `{type:'image', image}` and `{type:'file', data, mediaType|mimeType}` with base64
 *   or a data URL;
 * - Vercel AI SDK tool-output parts: `{type:'image-data'|'file-data'|'media', data, mediaType}` with base64;
 * - OpenAI images: `{type:'image_url', image_url:{url:'data:…'}}` and `{type:'input_image', image_url:'data:…'}`,
 *   and the Agents SDK's `{type:'input_image', image:'data:…'}` and `{type:'input_file', file:'data:…'}`.
 * Anything else is not media.
 */
export function recognizeMedia(node: unknown): MediaHit | undefined {
  if (!isObject(node)) return undefined;
  const type = node.type;
  const source = node.source;
  if (
    (type === 'data' || type === 'image' || type === 'document') &&
    isObject(source) &&
    source.type === 'base64'
  ) {
    const data = str(source.data);
    const mediaType = str(source.media_type);
    if (data === undefined || mediaType === undefined) return undefined;
    const name = str(node.name) ?? str(node.title);
    return {
      data,
      mediaType,
      name,
      replace: (url) => ({
        ...node,
        source: type === 'data' ? { type: 'url', url, media_type: mediaType } : { type: 'url', url },
      }),
    };
  }
  if (
    (type === 'image' || type === 'audio') &&
    typeof node.data === 'string' &&
    typeof node.mimeType === 'string'
  ) {
    const mediaType = node.mimeType;
    return {
      data: node.data,
      mediaType,
      replace: (url) => ({
        type: 'resource_link',
        uri: url,
        name: url.slice(url.lastIndexOf('/') + 1),
        mimeType: mediaType,
      }),
    };
  }
  if (type === 'image' && typeof node.image === 'string') {
    const parsed =
      parseDataUrl(node.image) ??
      (looksBase64(node.image)
        ? { mediaType: str(node.mediaType) ?? str(node.mimeType) ?? 'image/png', data: node.image }
        : undefined);
    if (!parsed) return undefined;
    return { ...parsed, replace: (url) => ({ ...node, image: url, mediaType: parsed.mediaType }) };
  }
  if (type === 'file' && typeof node.data === 'string') {
    const declared = str(node.mediaType) ?? str(node.mimeType);
    const parsed =
      parseDataUrl(node.data) ??
      (declared && looksBase64(node.data) ? { mediaType: declared, data: node.data } : undefined);
    if (!parsed) return undefined;
    return { ...parsed, name: str(node.filename), replace: (url) => ({ ...node, data: url }) };
  }
  if (
    (type === 'image-data' || type === 'file-data' || type === 'media') &&
    typeof node.data === 'string' &&
    typeof node.mediaType === 'string' &&
    looksBase64(node.data)
  ) {
    const mediaType = node.mediaType;
    return {
      data: node.data,
      mediaType,
      name: str(node.filename),
      replace: (url) => ({ ...node, data: url }),
    };
  }
  if (
    (type === 'input_image' || type === 'input_file') &&
    typeof node[type === 'input_image' ? 'image' : 'file'] === 'string'
  ) {
    const field = type === 'input_image' ? 'image' : 'file';
    const parsed = parseDataUrl(node[field] as string);
    if (parsed) return { ...parsed, name: str(node.filename), replace: (url) => ({ ...node, [field]: url }) };
  }
  if (type === 'image_url' && isObject(node.image_url) && typeof node.image_url.url === 'string') {
    const imageUrl = node.image_url;
    const parsed = parseDataUrl(imageUrl.url as string);
    if (!parsed) return undefined;
    return { ...parsed, replace: (url) => ({ ...node, image_url: { ...imageUrl, url } }) };
  }
  if (type === 'input_image' && typeof node.image_url === 'string') {
    const parsed = parseDataUrl(node.image_url);
    if (!parsed) return undefined;
    return { ...parsed, replace: (url) => ({ ...node, image_url: url }) };
  }
  return undefined;
}

// Long runs of the base64 alphabet only; a URL never passes (it holds ':').
function looksBase64(value: string): boolean {
  return value.length >= 16 && value.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(value);
}
