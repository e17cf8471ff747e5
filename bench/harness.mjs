// Shared measuring code for bench scenarios. Every number is a ratio taken in one run: the subject
// and its floor are measured interleaved (A, B, A, B, …) so that machine noise hits both alike.

/** Median of an array of numbers. */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The q-quantile (0..1) of an array of numbers. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/**
 * Times `subject` and `floor` alternately, `iterations` times each after `warmup` rounds, and
 * returns both samples in milliseconds.
 */
export async function interleave({ subject, floor, iterations = 200, warmup = 20 }) {
  for (let index = 0; index < warmup; index++) {
    await subject();
    await floor();
  }
  const subjectMs = [];
  const floorMs = [];
  for (let index = 0; index < iterations; index++) {
    const order = index % 2 === 0 ? [subject, floor] : [floor, subject];
    for (const fn of order) {
      const started = performance.now();
      await fn();
      (fn === subject ? subjectMs : floorMs).push(performance.now() - started);
    }
  }
  return { subjectMs, floorMs };
}

/** One table row comparing a subject with its floor. */
export function ratioRow({ scenario, subject, floor, samples, target }) {
  const subjectMedian = median(samples.subjectMs);
  const floorMedian = median(samples.floorMs);
  const ratio = subjectMedian / floorMedian;
  return {
    scenario,
    subject,
    floor,
    n: samples.subjectMs.length,
    subjectMedianMs: subjectMedian,
    floorMedianMs: floorMedian,
    subjectP90Ms: quantile(samples.subjectMs, 0.9),
    ratio,
    target,
    met: target === undefined ? undefined : ratio <= target,
  };
}

/** Prints a header and rows of cells as an aligned table. */
function printAligned(header, lines) {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => line[column].length)),
  );
  const format = (cells) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]))
      .join('  ')
      .trimEnd();
  console.log(format(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const line of lines) console.log(format(line));
}

/** Prints ratio rows as an aligned table. */
export function printTable(rows) {
  printAligned(
    ['scenario', 'subject', 'floor', 'n', 'subject med', 'floor med', 'subject p90', 'ratio', 'target', ''],
    rows.map((row) => [
      row.scenario,
      row.subject,
      row.floor,
      String(row.n),
      `${row.subjectMedianMs.toFixed(3)} ms`,
      `${row.floorMedianMs.toFixed(3)} ms`,
      `${row.subjectP90Ms.toFixed(3)} ms`,
      `${row.ratio.toFixed(3)}×`,
      row.target === undefined ? '' : `≤ ${row.target}×`,
      row.met === undefined ? '' : row.met ? 'met' : 'MISSED',
    ]),
  );
}

/** One measurement that is not a ratio (a peak memory, a cold start), with an optional ceiling. */
export function metricRow({ scenario, subject, value, unit, target }) {
  return {
    kind: 'metric',
    scenario,
    subject,
    value,
    unit,
    target,
    met: target === undefined ? undefined : value <= target,
  };
}

/** Prints metric rows as an aligned table. */
export function printMetrics(rows) {
  if (rows.length === 0) return;
  printAligned(
    ['scenario', 'subject', 'value', 'target', ''],
    rows.map((row) => [
      row.scenario,
      row.subject,
      `${row.value.toFixed(1)} ${row.unit}`,
      row.target === undefined ? '' : `≤ ${row.target} ${row.unit}`,
      row.met === undefined ? '' : row.met ? 'met' : 'MISSED',
    ]),
  );
}

/**
 * One system's measurement in a side-by-side scenario (@ws, the floor, or a peer). A system without
 * the feature is `missing` (a reason, never a zero); one that fails to load or to run is `failed`.
 * `samplesMs` are per-operation times; `peakRssMB` is the peak resident memory of the process that
 * ran the operation, where measured.
 */
export function peerRow({ scenario, system, version, samplesMs, peakRssMB, missing, failed, note }) {
  const measured = samplesMs !== undefined && samplesMs.length > 0;
  return {
    kind: 'peer',
    scenario,
    system,
    version,
    n: measured ? samplesMs.length : 0,
    medianMs: measured ? median(samplesMs) : undefined,
    p95Ms: measured ? quantile(samplesMs, 0.95) : undefined,
    peakRssMB,
    missing,
    failed,
    note,
  };
}

/**
 * Like {@link interleave}, for operations that leave something to tear down: each side's `run()`
 * resolves to a function that undoes it, which is called untimed before the next operation.
 */
export async function interleaveWithTeardown({ subject, floor, iterations, warmup = 1 }) {
  const subjectMs = [];
  const floorMs = [];
  for (let index = 0; index < warmup + iterations; index++) {
    const order = index % 2 === 0 ? [subject, floor] : [floor, subject];
    for (const fn of order) {
      const started = performance.now();
      const undo = await fn();
      const elapsed = performance.now() - started;
      await undo?.();
      if (index >= warmup) (fn === subject ? subjectMs : floorMs).push(elapsed);
    }
  }
  return { subjectMs, floorMs };
}

/** Runs `true` through a workspace's Bash tool; throws what the tool reported as an error. */
export async function bashTrue(workspace) {
  const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
  const result = await bash.call({ command: 'true' });
  if (result.isError) throw new Error(JSON.stringify(result.content));
}

/**
 * The subject of an "open + first command" row: a new workspace from `make(workspaceId)` (a fresh id
 * each time), initialized, `true` run through its Bash tool; resolves to its destroy().
 */
export function freshFirstCommand(make) {
  let sequence = 0;
  return async () => {
    const fresh = make(`bench-first-${sequence++}-${Date.now().toString(36)}`);
    await fresh.initialize();
    await bashTrue(fresh);
    return () => fresh.destroy();
  };
}
