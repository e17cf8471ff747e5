/**
 * A path as tools show it to the model: as is, or as a JSON string when it holds a control character
 * (a newline, a tab), so one path per line stays unambiguous.
 */
export function displayPath(path: string): string {
  for (let index = 0; index < path.length; index++) {
    const code = path.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return JSON.stringify(path);
  }
  return path;
}
