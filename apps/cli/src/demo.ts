import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeUtf8 } from '@ws/core/backend';
import { LocalWorkspace } from '@ws/local';
import { prepareHostDir } from './backends.js';

interface DemoOptions {
  workdir?: string;
  keep: boolean;
}

const out = (line = '') => process.stdout.write(`${line}\n`);
const indent = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');

/** The quick-start job: one local workspace, a few commands and files, each step printed. */
export async function runDemo(options: DemoOptions): Promise<number> {
  const temporary = options.workdir === undefined;
  const workdir =
    options.workdir === undefined
      ? await mkdtemp(join(tmpdir(), 'ws-demo-'))
      : await prepareHostDir(options.workdir);
  const started = performance.now();
  const workspace = new LocalWorkspace({ hostWorkdir: workdir, workspaceId: 'demo' });
  try {
    await workspace.initialize();
    out(`Opened a ${workspace.capabilities.backend} workspace "${workspace.id}" at ${workspace.workdir}`);
    const sandbox = workspace.getSandbox();

    const step = async (label: string, argv: string[]) => {
      const t0 = performance.now();
      const result = await sandbox.exec(argv, { timeoutMs: 10_000 });
      const ms = (performance.now() - t0).toFixed(1);
      out(`\n$ ${label}    (exit ${result.exitCode}, ${ms} ms)`);
      if (result.stdoutText) out(indent(result.stdoutText));
      if (result.stderrText) out(indent(`[stderr] ${result.stderrText}`));
      return result;
    };

    await step('uname -sm', ['uname', '-sm']);
    await step('printf with awkward arguments, passed verbatim', [
      'printf',
      '[%s]\\n',
      'a b',
      "it's",
      '$HOME',
      '*',
    ]);
    await step("sh -c 'echo to stdout; echo to stderr >&2; exit 3'", [
      'sh',
      '-c',
      'echo to stdout; echo to stderr >&2; exit 3',
    ]);
    const slow = await sandbox.exec(['sh', '-c', 'sleep 5 & sleep 5; echo never'], { timeoutMs: 200 });
    out(
      `\n$ sleep 5 with a 200 ms timeout    (timedOut ${slow.timedOut}, exit ${slow.exitCode}; the whole process group was killed)`,
    );

    await sandbox.writeFile('notes/hello.txt', 'Hello from @ws.\nSecond line.\n');
    out('\nwrote notes/hello.txt (parent directory created)');
    const binary = Uint8Array.from({ length: 256 }, (_, index) => index);
    await sandbox.writeFile('notes/bytes.bin', binary);
    const back = await sandbox.readFile('notes/bytes.bin');
    out(
      `wrote and read back notes/bytes.bin: ${back.byteLength} bytes, identical: ${back.every((value, index) => value === binary[index])}`,
    );
    out(`read notes/hello.txt:\n${indent(decodeUtf8(await sandbox.readFile('notes/hello.txt')))}`);
    await step('wc -l notes/hello.txt', ['wc', '-l', 'notes/hello.txt']);

    const entries = await sandbox.list('.');
    out(
      `\nworkdir now holds: ${entries
        .map((entry) => (entry.type === 'directory' ? `${entry.name}/` : entry.name))
        .sort()
        .join('  ')}`,
    );
    out(`\nInstructions for the model (first line): ${workspace.getInstructions().split('\n')[1]}`);
    out(`\nDone in ${(performance.now() - started).toFixed(0)} ms.`);
    return 0;
  } finally {
    await workspace.close();
    if (temporary && !options.keep) await rm(workdir, { recursive: true, force: true });
    else out(`Workspace files kept at ${workdir}`);
  }
}
