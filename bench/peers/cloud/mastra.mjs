// Mastra workspace sandboxes (`@mastra/e2b`, `@mastra/daytona` on @mastra/core): `start()`, then
// `executeCommand`, `destroy()` to close.
import { packageVersion } from './common.mjs';

export const system = 'Mastra';

export const api = {
  e2b: "new E2BSandbox({ apiUrl, apiKey, template: 'base' }) (envd from E2B_SANDBOX_URL).start(), executeCommand('true'), destroy()",
  daytona: "new DaytonaSandbox({ apiUrl, apiKey }).start(), executeCommand('true'), destroy()",
};

export function version(vendor) {
  const name = vendor === 'e2b' ? '@mastra/e2b' : '@mastra/daytona';
  return `${name} ${packageVersion(name)} (@mastra/core ${packageVersion('@mastra/core')})`;
}

let sequence = 0;

function sessionOf(sandbox) {
  return {
    async run() {
      const result = await sandbox.executeCommand('true');
      if (result.exitCode !== 0) throw new Error(`exit ${result.exitCode}: ${result.stderr ?? ''}`);
    },
    close: () => sandbox.destroy(),
  };
}

async function started(sandbox) {
  try {
    await sandbox.start();
    return sessionOf(sandbox);
  } catch (error) {
    await sandbox.destroy().catch(() => {});
    throw error;
  }
}

/**
 * E2BSandbox with the emulator's `apiUrl` and `apiKey` (envd's address comes from E2B_SANDBOX_URL,
 * which the scenario sets) and the `base` template named, as the other systems use it. Without a
 * template it looks up and builds its own (`GET /templates/aliases/…`, `POST /v3/templates`), which
 * the emulator does not serve.
 */
export async function e2b({ connection, owner }) {
  const { E2BSandbox } = await import('@mastra/e2b');
  return () =>
    started(
      new E2BSandbox({
        id: `ws-bench-${process.pid}-${sequence++}-${Date.now().toString(36)}`,
        template: 'base',
        apiUrl: connection.apiUrl,
        apiKey: connection.apiKey,
        metadata: { 'ws-bench-owner': owner },
      }),
    );
}

/** DaytonaSandbox with the emulator's `apiUrl` and `apiKey`. */
export async function daytona({ connection, owner }) {
  const { DaytonaSandbox } = await import('@mastra/daytona');
  return () =>
    started(
      new DaytonaSandbox({
        id: `ws-bench-${process.pid}-${sequence++}-${Date.now().toString(36)}`,
        apiUrl: connection.apiUrl,
        apiKey: connection.apiKey,
        labels: { 'ws-bench-owner': owner },
      }),
    );
}
