// `DEBUG=ws:*`: which namespaces print, in the `debug` package's pattern syntax.

/**
 * Whether `namespace` (`ws:command`) is switched on by `DEBUG`: a comma- or space-separated list of
 * patterns where `*` matches anything and a leading `-` switches a match off (`DEBUG=ws:*,-ws:file`).
 * Read on every call, so a program that sets `process.env.DEBUG` after loading `@ws` still gets it.
 */
export function debugEnabled(namespace: string, patterns: string | undefined = process.env.DEBUG): boolean {
  if (!patterns) return false;
  let enabled = false;
  for (const raw of patterns.split(/[\s,]+/)) {
    if (!raw) continue;
    const negated = raw.startsWith('-');
    const pattern = negated ? raw.slice(1) : raw;
    if (!matches(pattern, namespace)) continue;
    if (negated) return false;
    enabled = true;
  }
  return enabled;
}

function matches(pattern: string, namespace: string): boolean {
  if (pattern === '*') return true;
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === namespace;
  // Each `*` matches any run of characters, the literal parts in order.
  let at = 0;
  for (const [index, part] of parts.entries()) {
    if (index === 0) {
      if (!namespace.startsWith(part)) return false;
      at = part.length;
      continue;
    }
    if (index === parts.length - 1) return namespace.length - part.length >= at && namespace.endsWith(part);
    const found = namespace.indexOf(part, at);
    if (found === -1) return false;
    at = found + part.length;
  }
  return true;
}

let last: { patterns: string; any: boolean } | undefined;

/** Whether `DEBUG` switches on any of the namespaces of `@ws` (`DEBUG=*` does). */
export function anyDebugEnabled(patterns: string | undefined = process.env.DEBUG): boolean {
  if (!patterns) return false;
  if (last?.patterns !== patterns)
    last = { patterns, any: DEBUG_NAMESPACES.some((namespace) => debugEnabled(namespace, patterns)) };
  return last.any;
}

/** Every namespace `@ws` prints under. */
export const DEBUG_NAMESPACES = [
  'ws:workspace',
  'ws:sandbox',
  'ws:gateway',
  'ws:image',
  'ws:command',
  'ws:file',
  'ws:tool',
  'ws:retry',
  'ws:warning',
  'ws:manager',
  'ws:reap',
] as const;

/** Prints one line to stderr under `namespace` when `DEBUG` switches it on: `12:00:01.250 ws:command …`. */
export function debugLine(namespace: string, line: string): void {
  if (!debugEnabled(namespace)) return;
  const time = new Date().toISOString().slice(11, 23);
  process.stderr.write(`${time} ${namespace} ${line.replaceAll('\n', '\n    ')}\n`);
}
