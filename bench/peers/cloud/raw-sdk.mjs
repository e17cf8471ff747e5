// The floor: each vendor's own SDK, create + one command, with nothing in between.
import { expectSuccess, packageVersion } from './common.mjs';

export const system = 'raw SDK';

export const api = {
  e2b: "Sandbox.create('base'), commands.run('true'), kill()",
  daytona: "daytona.create(), process.executeCommand('true'), delete()",
};

export function version(vendor) {
  return vendor === 'e2b'
    ? `e2b ${packageVersion('e2b')}`
    : `@daytonaio/sdk ${packageVersion('@daytonaio/sdk')}`;
}

/** `Sandbox.create()` then `commands.run('true')`; `kill()` to close. */
export async function e2b({ connection, owner }) {
  const { Sandbox } = await import('e2b');
  return async () => {
    const sandbox = await Sandbox.create('base', { ...connection, metadata: { 'ws-bench-owner': owner } });
    return {
      async run() {
        const result = await sandbox.commands.run('true');
        expectSuccess(result.exitCode, result.stderr);
      },
      close: () => sandbox.kill(),
    };
  };
}

/** `daytona.create()` then `process.executeCommand('true')`; `delete()` to close. */
export async function daytona({ connection, owner, onDispose }) {
  const { Daytona } = await import('@daytonaio/sdk');
  const client = new Daytona(connection);
  onDispose(() => client[Symbol.asyncDispose]?.());
  return async () => {
    const sandbox = await client.create({ labels: { 'ws-bench-owner': owner } });
    return {
      async run() {
        const response = await sandbox.process.executeCommand('true');
        expectSuccess(response.exitCode, response.result);
      },
      close: () => sandbox.delete(),
    };
  };
}
