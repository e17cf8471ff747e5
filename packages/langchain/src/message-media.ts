/**
 * Media inside LangChain messages, moved to the workspace's `data/` folder and back. Each shape is
 * rewritten into one that stays valid for LangChain and that core's offloading leaves alone, with the
 * bytes replaced by a `workspace:///data/<sha256><ext>` URL:
 * - standard blocks (`image`, `audio`, `video`, `file`, `text-plain`) with base64 or `Uint8Array`
 *   `data`, or a `data:` URL: `url` holds the reference, `mimeType` stays;
 * - the older data blocks (`source_type: 'base64'`, `mime_type`): `source_type: 'url'` and `url`;
 * - OpenAI `image_url` blocks with a `data:` URL: the URL is the reference;
 * - Anthropic blocks (`source: { type: 'base64', media_type, data }`): `source: { type: 'url', url, media_type }`.
 * Reading back turns each reference into base64 again.
 */

type Node = Record<string, unknown>;

/** Stores base64 bytes of one media type and returns their `workspace:///` URL. */
export type StoreMedia = (data: string, mediaType: string) => Promise<string>;
/** Reads the bytes a `workspace:///` URL names, as base64. */
export type LoadMedia = (url: string) => Promise<string>;

const WORKSPACE_URL_PREFIX = 'workspace:///';
const STANDARD_DATA_TYPES = new Set(['image', 'audio', 'video', 'file', 'text-plain']);
const LEGACY_DATA_TYPES = new Set(['image', 'audio', 'file']);

const isObject = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
const isWorkspaceUrl = (value: unknown): value is string =>
  typeof value === 'string' && value.startsWith(WORKSPACE_URL_PREFIX);

/** `value` with every media payload of a known shape stored and replaced by its reference. */
export async function storeMediaIn(value: unknown, store: StoreMedia): Promise<unknown> {
  if (value instanceof Uint8Array) return base64Of(value);
  if (Array.isArray(value)) return Promise.all(value.map((item) => storeMediaIn(item, store)));
  if (!isObject(value)) return value;
  const stored = await storeNode(value, store);
  if (stored) return stored;
  const entries = await Promise.all(
    Object.entries(value).map(async ([key, item]) => [key, await storeMediaIn(item, store)] as const),
  );
  return Object.fromEntries(entries);
}

async function storeNode(node: Node, store: StoreMedia): Promise<Node | undefined> {
  const type = node.type;
  if (typeof type !== 'string') return undefined;
  if (STANDARD_DATA_TYPES.has(type) && !('source_type' in node) && !('source' in node)) {
    const mimeType = typeof node.mimeType === 'string' ? node.mimeType : undefined;
    const { data, url, ...rest } = node;
    if (isBase64(data) || data instanceof Uint8Array) {
      const base64 = typeof data === 'string' ? data : base64Of(data);
      const reference = await store(base64, mimeType ?? 'application/octet-stream');
      return { ...rest, url: reference };
    }
    const parsed = typeof url === 'string' ? parseDataUrl(url) : undefined;
    if (!parsed) return undefined;
    const reference = await store(parsed.data, mimeType ?? parsed.mediaType);
    return { ...rest, url: reference, mimeType: mimeType ?? parsed.mediaType };
  }
  if (LEGACY_DATA_TYPES.has(type) && node.source_type === 'base64' && isBase64(node.data)) {
    const { data, ...rest } = node;
    const mediaType = typeof node.mime_type === 'string' ? node.mime_type : 'application/octet-stream';
    return { ...rest, source_type: 'url', url: await store(data as string, mediaType) };
  }
  if (type === 'image_url') {
    const imageUrl = node.image_url;
    const url = typeof imageUrl === 'string' ? imageUrl : isObject(imageUrl) ? imageUrl.url : undefined;
    const parsed = typeof url === 'string' ? parseDataUrl(url) : undefined;
    if (!parsed) return undefined;
    const reference = await store(parsed.data, parsed.mediaType);
    return { ...node, image_url: isObject(imageUrl) ? { ...imageUrl, url: reference } : reference };
  }
  const source = node.source;
  if (isObject(source) && source.type === 'base64' && isBase64(source.data)) {
    const mediaType = typeof source.media_type === 'string' ? source.media_type : 'application/octet-stream';
    const reference = await store(source.data, mediaType);
    return { ...node, source: { type: 'url', url: reference, media_type: mediaType } };
  }
  return undefined;
}

/** `value` with every reference {@link storeMediaIn} left replaced by the bytes again, as base64. */
export async function restoreMediaIn(value: unknown, load: LoadMedia): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((item) => restoreMediaIn(item, load)));
  if (!isObject(value)) return value;
  const restored = await restoreNode(value, load);
  if (restored) return restored;
  const entries = await Promise.all(
    Object.entries(value).map(async ([key, item]) => [key, await restoreMediaIn(item, load)] as const),
  );
  return Object.fromEntries(entries);
}

async function restoreNode(node: Node, load: LoadMedia): Promise<Node | undefined> {
  const type = node.type;
  if (typeof type !== 'string') return undefined;
  if (STANDARD_DATA_TYPES.has(type) && !('source_type' in node) && isWorkspaceUrl(node.url)) {
    const { url, ...rest } = node;
    return { ...rest, data: await load(url as string) };
  }
  if (LEGACY_DATA_TYPES.has(type) && node.source_type === 'url' && isWorkspaceUrl(node.url)) {
    const { url, ...rest } = node;
    return { ...rest, source_type: 'base64', data: await load(url as string) };
  }
  if (type === 'image_url') {
    const imageUrl = node.image_url;
    const url = typeof imageUrl === 'string' ? imageUrl : isObject(imageUrl) ? imageUrl.url : undefined;
    if (!isWorkspaceUrl(url)) return undefined;
    const dataUrl = `data:${mediaTypeOf(url)};base64,${await load(url)}`;
    return { ...node, image_url: isObject(imageUrl) ? { ...imageUrl, url: dataUrl } : dataUrl };
  }
  const source = node.source;
  if (isObject(source) && source.type === 'url' && isWorkspaceUrl(source.url)) {
    const mediaType = typeof source.media_type === 'string' ? source.media_type : mediaTypeOf(source.url);
    return { ...node, source: { type: 'base64', media_type: mediaType, data: await load(source.url) } };
  }
  return undefined;
}

function base64Of(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

// Only text that decodes and encodes back to itself is taken for base64: anything else stays inline,
// so restoring can never change a message.
function isBase64(value: unknown): value is string {
  return typeof value === 'string' && Buffer.from(value, 'base64').toString('base64') === value;
}

function parseDataUrl(value: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]*)(?:;[^;,=]+=[^;,]*)*;base64,(.*)$/s.exec(value);
  if (!match || !isBase64(match[2])) return undefined;
  return { mediaType: match[1] || 'application/octet-stream', data: match[2] };
}

// The media type a reference's extension stands for, for the shapes that keep none beside the URL
// (an `image_url` data URL). Core names stored files `<sha256><ext>` from the media type.
const MEDIA_TYPES: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.bmp': 'image/bmp',
  '.svg': 'image/svg+xml',
  '.tiff': 'image/tiff',
  '.ico': 'image/x-icon',
  '.heic': 'image/heic',
  '.avif': 'image/avif',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.oga': 'audio/ogg',
  '.flac': 'audio/flac',
  '.m4a': 'audio/mp4',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.json': 'application/json',
};

function mediaTypeOf(url: string): string {
  const name = url.split(/[?#]/)[0] ?? url;
  const dot = name.lastIndexOf('.');
  return (dot === -1 ? undefined : MEDIA_TYPES[name.slice(dot).toLowerCase()]) ?? 'application/octet-stream';
}
