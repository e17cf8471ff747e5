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
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timed out'>((resolve) => {
      timer = setTimeout(() => resolve('timed out'), eachMs);
    });
    try {
      const outcome = await Promise.race([step.run().then(() => 'done' as const), deadline]);
      if (outcome === 'timed out') left.push(`${step.what}: still running after ${eachMs / 1000} s`);
    } catch (error) {
      left.push(`${step.what}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }
  if (left.length > 0) throw new Error(`the clean-up could not remove everything:\n- ${left.join('\n- ')}`);
}
