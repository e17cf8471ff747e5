// deepagents' Daytona sandbox (`@langchain/daytona`, with its own @daytonaio/sdk): `DaytonaSandbox.create`
// with the emulator in `auth`, commands through `execute`.
import { packageVersion } from './common.mjs';

export const system = 'deepagents (@langchain/daytona)';

export const api = {
  daytona: "DaytonaSandbox.create({ auth: { apiUrl, apiKey } }), execute('true'), close()",
};

export function version() {
  return `@langchain/daytona ${packageVersion('@langchain/daytona')}`;
}

export const missing = {
  e2b: 'no E2B sandbox: @langchain/daytona is the only deepagents sandbox package installed (Daytona only)',
};

export async function daytona({ connection, owner }) {
  const { DaytonaSandbox } = await import('@langchain/daytona');
  return async () => {
    const sandbox = await DaytonaSandbox.create({
      auth: { apiKey: connection.apiKey, apiUrl: connection.apiUrl },
      labels: { 'ws-bench-owner': owner },
    });
    return {
      async run() {
        const response = await sandbox.execute('true');
        if (response.exitCode !== 0) throw new Error(`exit ${response.exitCode}: ${response.output}`);
      },
      close: () => sandbox.close(),
    };
  };
}
