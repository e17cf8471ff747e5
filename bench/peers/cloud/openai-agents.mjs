// OpenAI Agents SDK sandboxes (`@openai/agents-extensions/sandbox/{e2b,daytona}`): a session from
// the vendor's SandboxClient, commands through `session.execCommand`.
import { packageVersion } from './common.mjs';

export const system = 'OpenAI Agents SDK';

export const api = {
  e2b: "E2BSandboxClient.create() (endpoint from E2B_* env), session.execCommand({ cmd: 'true' }), delete()",
  daytona:
    "DaytonaSandboxClient({ apiUrl, apiKey, sandboxSnapshotName: 'default' }).create(), session.execCommand({ cmd: 'true' }), delete()",
};

export function version() {
  return `@openai/agents-extensions ${packageVersion('@openai/agents-extensions')}`;
}

/** `execCommand` answers a transcript with a `Process exited with code N` line; anything but 0 fails. */
function checkTranscript(output) {
  const match = /Process exited with code (-?\d+)/.exec(String(output));
  if (!match || Number(match[1]) !== 0) throw new Error(String(output).slice(0, 200));
}

function sessionOf(session) {
  return {
    async run() {
      checkTranscript(await session.execCommand({ cmd: 'true' }));
    },
    close: () => session.delete(),
  };
}

/**
 * E2BSandboxClient has no endpoint options: the `e2b` SDK it loads reads E2B_API_URL,
 * E2B_SANDBOX_URL and E2B_API_KEY, which the scenario points at the emulator.
 */
export async function e2b({ owner }) {
  const { E2BSandboxClient } = await import('@openai/agents-extensions/sandbox/e2b');
  const client = new E2BSandboxClient({ template: 'base', metadata: { 'ws-bench-owner': owner } });
  return async () => sessionOf(await client.create());
}

/** DaytonaSandboxClient with the emulator's `apiUrl` and `apiKey`. */
export async function daytona({ connection }) {
  const { DaytonaSandboxClient } = await import('@openai/agents-extensions/sandbox/daytona');
  const client = new DaytonaSandboxClient({
    apiKey: connection.apiKey,
    apiUrl: connection.apiUrl,
    sandboxSnapshotName: 'default',
  });
  return async () => sessionOf(await client.create());
}
