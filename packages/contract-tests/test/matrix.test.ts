import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ConformanceMatrix, listConformanceCases, matrixProblems, planCases } from '../src/index.js';

// The repository's conformance matrix: which case runs on which of its thirteen targets. Its
// `targets` are written by hand; its `cases` follow from them and from what each case declares.
// `WS_MATRIX_WRITE=1 npx vitest run packages/contract-tests/test/matrix.test.ts` writes the cases
// again from the code (a new case gets its entry, a removed one loses it: say so in the change).
const path = join(import.meta.dirname, '..', 'matrix.json');
const matrix = JSON.parse(readFileSync(path, 'utf8')) as ConformanceMatrix;
const cases = listConformanceCases();

if (process.env.WS_MATRIX_WRITE === '1') {
  const written: ConformanceMatrix = { targets: matrix.targets, cases: planCases(cases, matrix.targets) };
  writeFileSync(path, `${JSON.stringify(written, null, 2)}\n`);
  console.warn(`[matrix] wrote ${path}: ${cases.length} cases`);
}

describe('the conformance matrix', () => {
  const problems = matrixProblems(
    process.env.WS_MATRIX_WRITE === '1' ? JSON.parse(readFileSync(path, 'utf8')) : matrix,
    cases,
  );
  const about = (pattern: RegExp) => problems.filter((problem) => pattern.test(problem));

  it('lists every case the suite declares, and only those (a case id leaves only by an edit of the list)', () => {
    expect(cases.length).toBeGreaterThan(100);
    expect(new Set(cases.map((facts) => facts.id)).size, 'case ids are unique').toBe(cases.length);
    expect(about(/missing from the matrix|no longer declares/)).toEqual([]);
  });

  it("keeps each case's kind and routes as its code declares them", () => {
    expect(about(/the matrix says/)).toEqual([]);
  });

  it('runs each case on the targets its kind and their routes give', () => {
    expect(about(/the matrix runs it on/)).toEqual([]);
  });

  it('runs every case on every route it takes, and every gateway case through every channel', () => {
    expect(about(/no target runs it|must run on every target/)).toEqual([]);
  });

  it('runs every backend-decided area on every backend', () => {
    expect(about(/runs no case of the backend-decided area/)).toEqual([]);
  });

  it('describes each target consistently', () => {
    expect(about(/^target /)).toEqual([]);
    expect(problems, 'every problem is one of the above').toEqual([]);
  });
});
