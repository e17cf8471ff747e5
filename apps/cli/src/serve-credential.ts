import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from './cli-args.js';

/** Fewer characters than this are guessable by a neighbour trying tokens against a loopback port. */
const MIN_TOKEN_CHARS = 16;
/** More than any token needs; a larger file is not a token file. */
const MAX_TOKEN_BYTES = 4_096;

/** The bearer token `ws serve --http` requires, and the file it generated, if it did. */
export interface HttpCredential {
  readonly token: string;
  /** The private file holding a token generated because none was given. */
  readonly generatedFile?: string | undefined;
  /** Removes the generated file (nothing for a given token). */
  dispose(): void;
}

/**
 * The token every HTTP request must carry: `WS_TOKEN`, else the content of `tokenFile` (a regular
 * file only its owner can read), else a new random one written to a private file. `WS_TOKEN` is
 * removed from this process's environment, so that commands of a workspace that inherits it (the
 * local backend's) cannot read it.
 * @throws UsageError for a token file others can read, a short token, or both sources given.
 */
export async function httpCredential(tokenFile: string | undefined): Promise<HttpCredential> {
  const fromEnv = process.env.WS_TOKEN;
  delete process.env.WS_TOKEN;
  if (fromEnv && tokenFile !== undefined)
    throw new UsageError('ws serve: give the token once: WS_TOKEN or --token-file, not both');
  if (fromEnv) return { token: checkToken(fromEnv, 'WS_TOKEN'), dispose: () => {} };
  if (tokenFile !== undefined) return { token: await readTokenFile(tokenFile), dispose: () => {} };
  const folder = mkdtempSync(join(tmpdir(), 'ws-serve-'));
  const file = join(folder, 'token');
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return {
    token,
    generatedFile: file,
    dispose: () => rmSync(folder, { recursive: true, force: true }),
  };
}

function checkToken(token: string, source: string): string {
  if (token.length < MIN_TOKEN_CHARS)
    throw new UsageError(
      `ws serve: the token in ${source} is too short: use at least ${MIN_TOKEN_CHARS} characters`,
    );
  if (/[^\x21-\x7e]/.test(token))
    throw new UsageError(`ws serve: the token in ${source} must be printable ASCII without spaces`);
  return token;
}

async function readTokenFile(path: string): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new UsageError(
      `ws serve: cannot read the token file ${path}: ${(error as NodeJS.ErrnoException).code}`,
    );
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new UsageError(`ws serve: the token file ${path} is not a regular file`);
    if ((info.mode & 0o077) !== 0)
      throw new UsageError(
        `ws serve: the token file ${path} can be read by others (mode ${(info.mode & 0o777).toString(8)}); chmod 600 it`,
      );
    if (info.size > MAX_TOKEN_BYTES)
      throw new UsageError(`ws serve: the token file ${path} is larger than a token (${info.size} bytes)`);
    const text = (await handle.readFile('utf8')).replace(/\r?\n$/, '');
    return checkToken(text, path);
  } finally {
    await handle.close();
  }
}
