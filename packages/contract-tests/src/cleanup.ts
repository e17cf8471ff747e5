/** One step of a test file's clean-up: what it removes, and how. */
export interface CleanupStep {
  /** What the step removes, as the report names it ("the sandboxes of owner ws-test-1a2b"). */
  readonly what: string;
  /** Removes it; a rejection is reported, as is a step still running past the deadline. */
  readonly run: () => Promise<unknown>;
}

/**
 * Runs a test file's clean-up steps one after another, each within `eachMs`, and goes on past a step
 * that fails or hangs; then throws one error naming every step that did not finish and why (so a
 * hook never hangs until vitest's own hook timeout, and never hides what it left behind).
 */
export async function cleanUpWithin(steps: readonly CleanupStep[], eachMs = 30_000): Promise<void> {
  const left: string[] = [];
  for (const step of steps) {
    try {
      if ((await within(step.run(), eachMs)) === 'timed out')
        left.push(`${step.what}: still running after ${eachMs / 1000} s`);
    } catch (error) {
      left.push(`${step.what}: ${messageOf(error)}`);
    }
  }
  if (left.length > 0) throw new Error(`the clean-up could not remove everything:\n- ${left.join('\n- ')}`);
}

/**
 * Closes `workspaces` side by side, each within `eachMs`. A close that rejects is reported on stderr
 * (a case may have left its workspace broken on purpose: its sandbox killed, its gateway dead); then
 * one error names every close still running at its deadline, so the hook that calls it says which
 * workspace hung instead of timing out without a word.
 */
export async function closeAllWithin(
  workspaces: readonly { readonly id: string; close(): Promise<void> }[],
  eachMs: number,
): Promise<void> {
  const hung: string[] = [];
  const failed: string[] = [];
  await Promise.all(
    workspaces.map(async (workspace) => {
      try {
        if ((await within(workspace.close(), eachMs)) === 'timed out')
          hung.push(`workspace ${workspace.id}: close() still running after ${eachMs / 1000} s`);
      } catch (error) {
        failed.push(`workspace ${workspace.id}: ${messageOf(error)}`);
      }
    }),
  );
  if (failed.length > 0)
    console.warn(`close() failed for ${failed.length} workspace(s):\n- ${failed.join('\n- ')}`);
  if (hung.length > 0)
    throw new Error(`the clean-up could not close every workspace:\n- ${hung.join('\n- ')}`);
}

/** `work`'s own outcome ('done', or its rejection), or 'timed out' once `ms` pass first. */
async function within(work: Promise<unknown>, ms: number): Promise<'done' | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timed out'>((resolve) => {
    timer = setTimeout(() => resolve('timed out'), ms);
  });
  try {
    return await Promise.race([work.then(() => 'done' as const), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
