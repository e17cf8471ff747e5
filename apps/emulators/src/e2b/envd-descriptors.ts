import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { DescFile, DescService } from '@bufbuild/protobuf';
import { fileDesc } from '@bufbuild/protobuf/codegenv2';
import {
  file_google_protobuf_any,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
} from '@bufbuild/protobuf/wkt';

/** The two envd services, exactly as the installed `e2b` SDK speaks them. */
export interface EnvdDescriptors {
  /** The `process.Process` service. */
  process: DescService;
  /** The `filesystem.Filesystem` service. */
  filesystem: DescService;
  /** The bundle the descriptors were read from. */
  bundlePath: string;
}

// The well-known files an envd descriptor may import (today only timestamp.proto is used).
const WELL_KNOWN: readonly DescFile[] = [
  file_google_protobuf_any,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
];

// The SDK inlines its generated *_pb modules as `fileDesc("<base64 FileDescriptorProto>")` (the CJS
// build as `(0, …fileDesc)("…")`) and exports none of them; reading them from the bundle keeps the
// emulator on the installed SDK's schema.
const FILE_DESC_CALL = /fileDesc\)?\(\s*"([A-Za-z0-9+/=]*)"/g;

/** The installed `e2b` bundle: its ESM build (`module`) when the manifest names one, else `main`. */
export function e2bBundlePath(): string {
  const require = createRequire(import.meta.url);
  const main = require.resolve('e2b');
  try {
    const manifestPath = require.resolve('e2b/package.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { module?: unknown };
    if (typeof manifest.module === 'string') return join(dirname(manifestPath), manifest.module);
  } catch {
    // no readable manifest: the main entry has the same descriptors
  }
  return main;
}

/**
 * Reads the `process.Process` and `filesystem.Filesystem` service descriptors out of the installed `e2b`
 * bundle. Throws a descriptive error when the bundle no longer has them in the expected form.
 */
export function loadEnvdDescriptors(bundlePath: string = e2bBundlePath()): EnvdDescriptors {
  let source: string;
  try {
    source = readFileSync(bundlePath, 'utf8');
  } catch (error) {
    throw new Error(`Cannot read the e2b SDK bundle at ${bundlePath}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const encoded = [...source.matchAll(FILE_DESC_CALL)].map((match) => match[1] ?? '');
  const problem = (what: string) =>
    new Error(
      `The envd protobuf descriptors were not found in the e2b SDK bundle ${bundlePath}: ${what}. ` +
        'The emulator reads them from `fileDesc("<base64>")` calls in the bundle; the SDK build changed its ' +
        'layout, so update the extraction in apps/emulators/src/e2b/envd-descriptors.ts (or pin the e2b ' +
        'version the emulator was checked against).',
    );
  if (encoded.length < 2) {
    throw problem(`found ${encoded.length} fileDesc("…") call(s), expected at least 2`);
  }
  const services = new Map<string, DescService>();
  const failures: string[] = [];
  for (const base64 of encoded) {
    let file: DescFile;
    try {
      // Embedded descriptors carry no import list; offering every well-known file resolves theirs.
      file = fileDesc(base64, [...WELL_KNOWN]);
    } catch (error) {
      failures.push((error as Error).message);
      continue;
    }
    for (const service of file.services) services.set(service.typeName, service);
  }
  const process = services.get('process.Process');
  const filesystem = services.get('filesystem.Filesystem');
  if (!process || !filesystem) {
    const found = [...services.keys()].join(', ') || 'none';
    const why = failures.length > 0 ? ` (undecodable: ${failures.join('; ')})` : '';
    throw problem(`decoded services: ${found}${why}; expected process.Process and filesystem.Filesystem`);
  }
  return { process, filesystem, bundlePath };
}
