#!/usr/bin/env node
// ws-emulator: runs a vendor emulator in the foreground (see USAGE). The env lines go to stdout, logs to
// stderr; a usage error is one line on stderr and exit code 2.
import { parseArgs } from 'node:util';
import { LimitOptionError, parseLimitPairs, resolveLimits } from './limits.js';
import {
  EMULATOR_VENDORS,
  type EmulatorVendor,
  IMAGE_OPTIONS,
  type ImageOption,
  type StartedEmulator,
  VENDOR_TABLE,
  type VendorOption,
} from './vendor-table.js';

const USAGE = `${EMULATOR_VENDORS.map(
  (vendor, index) =>
    `${index === 0 ? 'Usage:' : '      '} ws-emulator ${vendor} ${VENDOR_TABLE[vendor].synopsis}`,
).join('\n')}
       ws-emulator --help

Every emulator also takes --limit NAME=VALUE (repeatable): one of the vendor's limits it enforces, whose
real defaults are
${EMULATOR_VENDORS.map((vendor) => `  ${vendor}: ${limitList(vendor)}`).join('\n')}

${EMULATOR_VENDORS.map((vendor) => VENDOR_TABLE[vendor].help).join('\n\n')}

Stopping an emulator leaves the sandboxes' containers (and the k8s emulator's volumes); remove them with
  docker rm -f $(docker ps -aq --filter label=ws.emulator=VENDOR)
  docker volume rm $(docker volume ls -q --filter label=ws.emulator=k8s)`;

/** `name=default, …` of a vendor's limits, for the usage text. */
function limitList(vendor: EmulatorVendor): string {
  const entries = Object.entries(VENDOR_TABLE[vendor].limits);
  return entries.length === 0 ? '(none)' : entries.map(([name, value]) => `${name}=${value}`).join(', ');
}

/** The options not every emulator takes, in the order a command line is checked for them. */
const VENDOR_OPTIONS: readonly (ImageOption | VendorOption)[] = [
  'public-port',
  ...IMAGE_OPTIONS,
  'token',
  'kubeconfig',
  'api-key',
];

/** Whether `vendor`'s emulator takes `option`. */
function takes(vendor: EmulatorVendor, option: ImageOption | VendorOption): boolean {
  const entry = VENDOR_TABLE[vendor];
  return option === entry.images.option || (entry.options as readonly string[]).includes(option);
}

/** Why `vendor` refuses `option`: the option it takes instead, else the emulators that take it. */
function refusal(vendor: EmulatorVendor, option: ImageOption | VendorOption): string {
  const entry = VENDOR_TABLE[vendor];
  const instead = (IMAGE_OPTIONS as readonly string[]).includes(option)
    ? entry.images.option
    : entry.instead?.[option as VendorOption];
  if (instead)
    return `--${option} is not ${/^[aeiou]/.test(vendor) ? 'an' : 'a'} ${vendor} option; use --${instead}`;
  const takers = EMULATOR_VENDORS.filter((name) => takes(name, option));
  return `--${option} is a ${takers.join(' and ')} option`;
}

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
      image?: string[];
      token?: string;
      kubeconfig?: string;
      'api-key'?: string[];
      instance?: string;
      'no-network'?: boolean;
      'public-port'?: string;
      quiet?: boolean;
      'until-stdin-ends'?: boolean;
      limit?: string[];
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
        image: { type: 'string', multiple: true },
        token: { type: 'string' },
        kubeconfig: { type: 'string' },
        'api-key': { type: 'string', multiple: true },
        instance: { type: 'string' },
        'no-network': { type: 'boolean' },
        'public-port': { type: 'string' },
        quiet: { type: 'boolean' },
        'until-stdin-ends': { type: 'boolean' },
        limit: { type: 'string', multiple: true },
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
  const [name, ...extra] = positionals;
  if (name === undefined) return fail(`name the emulator to run: ${EMULATOR_VENDORS.join(', ')}`, 2);
  if (!(EMULATOR_VENDORS as readonly string[]).includes(name))
    return fail(`unknown emulator ${JSON.stringify(name)}; ${EMULATOR_VENDORS.join(', ')} exist`, 2);
  const vendor = name as EmulatorVendor;
  const entry = VENDOR_TABLE[vendor];
  if (extra.length > 0) return fail(`unexpected argument ${extra[0]}`, 2);
  let port = 0;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535)
      return fail(`--port takes a port number, not ${values.port}`, 2);
  }
  let publicPort: number | undefined;
  if (values['public-port'] !== undefined) {
    publicPort = Number(values['public-port']);
    if (!/^\d+$/.test(values['public-port']) || publicPort < 1 || publicPort > 65535)
      return fail(`--public-port takes a port number, not ${values['public-port']}`, 2);
  }
  for (const option of VENDOR_OPTIONS)
    if (values[option] !== undefined && !takes(vendor, option)) return fail(refusal(vendor, option), 2);
  const images: Record<string, string> = {};
  for (const pair of values[entry.images.option] ?? []) {
    const separator = pair.indexOf('=');
    if (separator <= 0 || separator === pair.length - 1)
      return fail(`--${entry.images.option} takes ${entry.images.name}=IMAGE, not ${pair}`, 2);
    images[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  const apiKeys = values['api-key'];
  if (apiKeys?.some((key) => key === '')) return fail('--api-key takes a non-empty key', 2);
  if (values.token === '') return fail('--token takes a non-empty token', 2);
  let limits: Record<string, number> | undefined;
  try {
    if (values.limit) limits = { ...resolveLimits(entry.limits, parseLimitPairs(values.limit), vendor) };
  } catch (error) {
    if (error instanceof LimitOptionError) return fail(error.message, 2);
    throw error;
  }
  const onLog = values.quiet
    ? (line: string) => {
        if (line.startsWith(`${vendor}:`)) process.stderr.write(`${line}\n`);
      }
    : (line: string) => process.stderr.write(`${line}\n`);

  let emulator: StartedEmulator;
  try {
    emulator = await entry.start({
      port,
      ...(values.instance !== undefined ? { instance: values.instance } : {}),
      ...(values['no-network'] ? { network: false } : {}),
      ...(publicPort !== undefined ? { publicPort } : {}),
      onLog,
      ...(apiKeys ? { apiKeys } : {}),
      images,
      ...(values.token !== undefined ? { token: values.token } : {}),
      ...(values.kubeconfig !== undefined ? { kubeconfigPath: values.kubeconfig } : {}),
      ...(limits ? { limits } : {}),
    });
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error), 1);
  }
  for (const [key, value] of Object.entries(emulator.env)) process.stdout.write(`export ${key}=${value}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    if (values['until-stdin-ends']) {
      process.stdin.once('end', resolve).once('close', resolve).once('error', resolve);
      process.stdin.resume();
    }
  });
  // Stopped by a signal: stdin, still open, must not keep this process alive.
  process.stdin.destroy();
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
