#!/usr/bin/env node
// ws-emulator: runs a vendor emulator in the foreground (see USAGE). The env lines go to stdout, logs to
// stderr; a usage error is one line on stderr and exit code 2.
import { parseArgs } from 'node:util';
import { DEFAULT_DAYTONA_SNAPSHOTS, startDaytonaEmulator } from './daytona/daytona-emulator.js';
import { DEFAULT_E2B_TEMPLATES, startE2BEmulator } from './e2b/e2b-emulator.js';

const USAGE = `Usage: ws-emulator e2b [--port N] [--template ID=IMAGE]... [--api-key KEY]... [--instance NAME] [--quiet]
       ws-emulator daytona [--port N] [--snapshot NAME=IMAGE]... [--api-key KEY]... [--instance NAME] [--quiet]
       ws-emulator --help

Runs an emulator of E2B's API (control plane and envd) on 127.0.0.1, backed by Docker containers
(labelled ws.emulator=e2b and its instance; sandboxes left by an earlier run of the same instance are
taken over), until SIGINT or SIGTERM.
The unmodified e2b SDK uses it with the environment it prints:

  export E2B_API_URL=http://127.0.0.1:PORT
  export E2B_SANDBOX_URL=http://127.0.0.1:PORT
  export E2B_API_KEY=KEY

  --port N              the port (default: a free one)
  --template ID=IMAGE   a template ID and the image its sandboxes run (repeatable; default:
                        ${Object.entries(DEFAULT_E2B_TEMPLATES)
                          .map(([id, image]) => `${id}=${image}`)
                          .join(', ')}); an image the engine has also works as a template ID
  --api-key KEY         accept only this X-API-KEY (repeatable; default: any non-empty key)
  --instance NAME       whose sandboxes these are (default: default); emulators of other instances on
                        the same engine leave them alone
  --quiet               no request log on stderr
  -h, --help            show this help

The daytona emulator serves Daytona's control plane (under /api) and every sandbox's toolbox (under
/toolbox/<id>); the unmodified @daytonaio/sdk uses it with

  export DAYTONA_API_URL=http://127.0.0.1:PORT/api
  export DAYTONA_API_KEY=KEY

  --snapshot NAME=IMAGE a snapshot name and the image its sandboxes run (repeatable; default:
                        ${Object.entries(DEFAULT_DAYTONA_SNAPSHOTS)
                          .map(([name, image]) => `${name}=${image}`)
                          .join(', ')}; the first is the default snapshot); an image the engine has
                        also works as a snapshot name
  --api-key KEY         accept only this bearer key (repeatable; default: any non-empty key)

Stopping an emulator leaves the sandboxes' containers; remove them with
  docker rm -f $(docker ps -aq --filter label=ws.emulator=e2b)
  docker rm -f $(docker ps -aq --filter label=ws.emulator=daytona)`;

/** A one-line reason for a command-line parsing error. */
function usageError(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  const option = /'([^']+)'/.exec(message ?? '')?.[1]?.replace(/ <value>$/, '');
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option ${option ?? ''}`;
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `unexpected argument ${option ?? ''}`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') return `${option ?? 'an option'} needs a value`;
  return String(message ?? error).split('\n')[0] ?? 'bad arguments';
}

function fail(reason: string, code: number): number {
  process.stderr.write(
    `ws-emulator: ${reason.replace(/\s*\n\s*/g, ' ')}${code === 2 ? ' (see --help)' : ''}\n`,
  );
  return code;
}

async function main(args: string[]): Promise<number> {
  let parsed: {
    values: {
      port?: string;
      template?: string[];
      snapshot?: string[];
      'api-key'?: string[];
      instance?: string;
      quiet?: boolean;
      help?: boolean;
    };
    positionals: string[];
  };
  try {
    parsed = parseArgs({
      args,
      options: {
        port: { type: 'string' },
        template: { type: 'string', multiple: true },
        snapshot: { type: 'string', multiple: true },
        'api-key': { type: 'string', multiple: true },
        instance: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    return fail(usageError(error), 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [vendor, ...extra] = positionals;
  if (vendor === undefined)
    return fail('name the emulator to run: ws-emulator e2b, or ws-emulator daytona', 2);
  if (vendor !== 'e2b' && vendor !== 'daytona')
    return fail(`unknown emulator ${JSON.stringify(vendor)}; e2b and daytona exist`, 2);
  if (extra.length > 0) return fail(`unexpected argument ${extra[0]}`, 2);
  let port = 0;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535)
      return fail(`--port takes a port number, not ${values.port}`, 2);
  }
  if (vendor === 'daytona' && values.template) return fail('--template is an e2b option; use --snapshot', 2);
  if (vendor === 'e2b' && values.snapshot) return fail('--snapshot is a daytona option; use --template', 2);
  const templates: Record<string, string> = {};
  for (const pair of values.template ?? values.snapshot ?? []) {
    const separator = pair.indexOf('=');
    if (separator <= 0 || separator === pair.length - 1)
      return fail(
        `--${vendor === 'e2b' ? 'template takes ID' : 'snapshot takes NAME'}=IMAGE, not ${pair}`,
        2,
      );
    templates[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  const apiKeys = values['api-key'];
  if (apiKeys?.some((key) => key === '')) return fail('--api-key takes a non-empty key', 2);
  const onLog = values.quiet
    ? (line: string) => {
        if (line.startsWith(`${vendor}:`)) process.stderr.write(`${line}\n`);
      }
    : (line: string) => process.stderr.write(`${line}\n`);

  let emulator: { env: Record<string, string>; close(): Promise<void> };
  try {
    const common = {
      port,
      ...(apiKeys ? { apiKeys } : {}),
      ...(values.instance !== undefined ? { instance: values.instance } : {}),
      onLog,
    };
    emulator =
      vendor === 'e2b'
        ? await startE2BEmulator({ ...common, templates })
        : await startDaytonaEmulator({ ...common, snapshots: templates });
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error), 1);
  }
  for (const [name, value] of Object.entries(emulator.env)) process.stdout.write(`export ${name}=${value}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await emulator.close();
  process.stderr.write("ws-emulator: stopped; the sandboxes' containers are left in place\n");
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = fail(String(error), 1);
  },
);
