import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalWorkspace } from '@ws/local';
import { interleave, metricRow, ratioRow } from '../harness.mjs';

export const name = 'tools-io';

/** Read of a 2 000-line file and Edit of a 10 MB file against plain fs work; Bash printing 1 GB. */
export async function run({ iterations }) {
  const workdir = await mkdtemp(join(tmpdir(), 'ws-bench-io-'));
  const workspace = await LocalWorkspace.open({ hostWorkdir: workdir });
  try {
    const tools = Object.fromEntries((await workspace.listTools()).map((tool) => [tool.name, tool]));
    const rows = [];

    const small = join(workdir, 'two-thousand.ts');
    await writeFile(
      small,
      Array.from(
        { length: 2_000 },
        (_, index) => `export const value${index} = ${index}; // line ${index}`,
      ).join('\n'),
    );
    const readSamples = await interleave({
      subject: () => tools.Read.call({ file_path: small }),
      // The least work that gives the same text: read, split, number.
      floor: async () => {
        const text = await readFile(small, 'utf8');
        return text
          .split('\n')
          .map((line, index) => `${String(index + 1).padStart(6)}\t${line}`)
          .join('\n');
      },
      iterations,
    });
    rows.push(
      ratioRow({
        scenario: 'Read 2 000 lines',
        subject: 'Read tool',
        floor: 'fs.readFile + format',
        samples: readSamples,
      }),
    );

    const big = join(workdir, 'ten-mb.txt');
    const lines = Array.from({ length: 160_000 }, (_, index) => `line ${index} ${'x'.repeat(56)}`);
    await writeFile(big, `${lines.join('\n')}\n`);
    let toggle = 0;
    await tools.Read.call({ file_path: big });
    const editSamples = await interleave({
      subject: async () => {
        const [from, to] =
          toggle++ % 2 === 0 ? ['line 80000 ', 'LINE 80000 '] : ['LINE 80000 ', 'line 80000 '];
        const result = await tools.Edit.call({ file_path: big, old_string: from, new_string: to });
        if (result.isError) throw new Error(result.content[0].text);
      },
      floor: async () => {
        const text = await readFile(big, 'utf8');
        await writeFile(`${big}.floor`, text.replace('line 80001 ', 'LINE 80001 '));
      },
      iterations: Math.max(10, Math.round(iterations / 10)),
      warmup: 3,
    });
    rows.push(
      ratioRow({
        scenario: 'Edit 10 MB file',
        subject: 'Edit tool (read, hash, replace, write, diff)',
        floor: 'fs read + replace + write',
        samples: editSamples,
      }),
    );

    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 10);
    const started = performance.now();
    const result = await tools.Bash.call({
      command: "head -c 1073741824 /dev/zero | tr '\\0' x",
      timeout: 600_000,
    });
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    if (result.isError || !result.content[0].text.endsWith('(output truncated)'))
      throw new Error('Bash 1 GB did not return truncated text');
    rows.push(
      metricRow({
        scenario: 'Bash printing 1 GB',
        subject: 'host RSS growth',
        value: (peak - before) / 1024 / 1024,
        unit: 'MB',
        target: 100,
      }),
    );
    rows.push(metricRow({ scenario: 'Bash printing 1 GB', subject: 'wall time', value: seconds, unit: 's' }));
    return rows;
  } finally {
    await workspace.close();
    await rm(workdir, { recursive: true, force: true });
  }
}
