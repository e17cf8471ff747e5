import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { RELAY, relayFrame } from '../src/session-process.js';

/** Runs the relay in this host's sh around `command`, sends the frames, and returns what the command read. */
async function throughRelay(frames: string[], command = 'cat'): Promise<Buffer> {
  const child = spawn('sh', ['-c', RELAY, 'sh', command], { stdio: ['pipe', 'pipe', 'inherit'] });
  const out: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  for (const frame of frames) child.stdin.write(frame);
  child.stdin.end();
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(code).toBe(0);
  return Buffer.concat(out);
}

describe('the input relay of a Daytona session command', () => {
  it('sends a small printable write as lines and anything else as base64', () => {
    expect(relayFrame(Buffer.from('1 o 3 GET\n2 d 3 e30=\n'))).toBe('=2\n1 o 3 GET\n2 d 3 e30=\n');
    expect(relayFrame(Buffer.from('no newline at the end'))).toMatch(/^\d+\n[A-Za-z0-9+/=]+$/);
    expect(relayFrame(Buffer.from('tab\there\n'))).toMatch(/^\d+\n/);
    expect(relayFrame(Buffer.from('é\n'))).toMatch(/^\d+\n/);
    expect(relayFrame(Buffer.from(`${'x'.repeat(9000)}\n`))).toMatch(/^\d+\n/);
  });

  it('delivers every byte of mixed writes in order, backslashes, spaces and empty lines included, then ends the input', async () => {
    const writes = [
      Buffer.from('  leading and trailing spaces  \n'),
      Buffer.from('back\\slash \\n and $HOME `x` "q" \'s\' -n -e %s\n\n'),
      Buffer.from([0, 1, 2, 255, 10, 13, 0x1b]),
      Buffer.from('partial line without newline'),
      Buffer.from('\nlast\n'),
      Buffer.from(`${'y'.repeat(100_000)}\n`),
    ];
    const read = await throughRelay([...writes.map((bytes) => relayFrame(bytes)), '.\n']);
    expect(read.equals(Buffer.concat(writes))).toBe(true);
  });

  it('ends the command input at the end mark: a command reading to the end exits', async () => {
    const read = await throughRelay([relayFrame(Buffer.from('a\nb\n')), '.\n'], 'wc -l');
    expect(read.toString().trim()).toBe('2');
  });
});
