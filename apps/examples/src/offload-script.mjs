// The scripted agent of the offloading examples, the same for every framework: each step looks at
// everything the model was sent (as one JSON text) and answers with a tool call or a final text.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The MCP server the examples add: a `build_log` tool that prints 5 000 000 characters. */
export const BUILD_LOG_SERVER = fileURLToPath(new URL('./build-log-server.mjs', import.meta.url));

/**
 * What the examples pass as `offload`: the default limit for tool results (200 000 characters), a
 * short preview, and a small context budget so that a few turns pass it.
 */
export const OFFLOAD_SETTINGS = { previewChars: 2_000, contextBudgetChars: 16_000, contextKeepChars: 6_000 };

const wholeResultPath = (seen) => /The whole result is in '([^']+)'/.exec(seen)?.[1];
const contextPath = (seen) => /is offloaded to '([^']+)'/.exec(seen)?.[1];
const errorLine = (seen) => /line \d{6} ERROR [^\\"]*/.exec(seen)?.[0];

/** The first task: run a few commands, fetch the build log, find its error in the offloaded file. */
export const FIRST_TASK = 'Run the four checks, then find the error in the last build log.';
/** The second task, after the first conversation was parked: answer from the offloaded context. */
export const SECOND_TASK = 'Which line of the build log had the error?';

/**
 * The steps of the first task, then of the second. A step returns `{ tool, input }` or `{ text }`.
 * @type {Array<(seen: string) => { tool: string, input: object } | { text: string }>}
 */
export const OFFLOAD_SCRIPT = [
  ...[1, 2, 3, 4].map((check) => () => ({
    tool: 'Bash',
    input: { command: `printf 'check ${check} passed %.0s' $(seq 1 300)` },
  })),
  () => ({ tool: 'mcp__logs__build_log', input: {} }),
  (seen) => ({
    tool: 'Grep',
    input: { pattern: 'ERROR', path: wholeResultPath(seen), output_mode: 'content' },
  }),
  (seen) => ({ text: `All four checks passed. The build failed at: ${errorLine(seen) ?? 'not found'}` }),
  (seen) => ({ tool: 'Grep', input: { pattern: 'ERROR', path: contextPath(seen), output_mode: 'content' } }),
  (seen) => ({ text: `From the offloaded conversation: ${errorLine(seen) ?? 'not found'}` }),
];

/**
 * Prints what an offload run showed: what the model was sent of the build log and the file holding
 * all of it, the first answer, the messages parked in `context.jsonl` and the second answer.
 * @param {{ workdir: string }} workspace
 * @param {{ sent: string, firstAnswer: string, secondAnswer: string, parked?: string }} run
 */
export function reportOffload(workspace, { sent, firstAnswer, secondAnswer, parked = 'messages' }) {
  const file = /The whole result is in '([^']+)'/.exec(sent)[1];
  console.log(
    `The model was sent ${sent.length} characters of the build log, ending with:\n  ${sent.slice(-220)}`,
  );
  console.log(`${file} holds ${readFileSync(file, 'utf8').length} characters.`);
  console.log(`\n${firstAnswer}`);
  const context = join(workspace.workdir, 'sessions/offload-demo/context.jsonl');
  console.log(`\n${readFileSync(context, 'utf8').trim().split('\n').length} ${parked} parked in ${context}`);
  console.log(secondAnswer);
}
