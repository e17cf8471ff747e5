/** One word for a POSIX shell: the text in single quotes (each `'` as `'\''`), whatever it holds. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}
