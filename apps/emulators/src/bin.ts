#!/usr/bin/env node
// ws-emulator: runs a vendor emulator in the foreground (see USAGE). The env lines go to stdout, logs to
// stderr; a usage error is one line on stderr and exit code 2.
import { parseArgs } from 'node:util';
import { DEFAULT_DAYTONA_SNAPSHOTS, startDaytonaEmulator } from './daytona/daytona-emulator.js';
import { DEFAULT_E2B_TEMPLATES, startE2BEmulator } from './e2b/e2b-emulator.js';
import { DEFAULT_K8S_IMAGES, startK8sEmulator } from './k8s/k8s-emulator.js';
import { DEFAULT_OPENSANDBOX_IMAGES, startOpenSandboxEmulator } from './opensandbox/opensandbox-emulator.js';

const VENDORS = ['e2b', 'daytona', 'k8s', 'opensandbox'] as const;
type Vendor = (typeof VENDORS)[number];

/** `NAME=IMAGE, …` of a default map, for the usage text. */
function pairs(map: Readonly<Record<string, string>>): string {
  return Object.entries(map)
    .map(([name, image]) => `${name}=${image}`)
    .join(', ');
}

const USAGE = `Usage: ws-emulator e2b [--port N] [--template ID=IMAGE]... [--api-key KEY]... [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]
       ws-emulator daytona [--port N] [--public-port N] [--snapshot NAME=IMAGE]... [--api-key KEY]... [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]
       ws-emulator k8s [--port N] [--image NAME=IMAGE]... [--token TOKEN] [--kubeconfig PATH] [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]
       ws-emulator opensandbox [--port N] [--public-port N] [--image URI=IMAGE]... [--api-key KEY]... [--instance NAME] [--no-network] [--quiet] [--until-stdin-ends]
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
                        ${pairs(DEFAULT_E2B_TEMPLATES)}); an image the engine has also works as a template ID
  --api-key KEY         accept only this X-API-KEY (repeatable; default: any non-empty key)
  --instance NAME       whose sandboxes these are (default: default); emulators of other instances on
                        the same engine leave them alone
  --no-network          sandboxes get no network at all, only their own loopback, whatever they ask
                        for (they start sooner; for suites that never use the network from inside)
  --quiet               no request log on stderr
  --until-stdin-ends    stop also when standard input ends (run from a parent that may die
                        without stopping it: the parent holds the other end of a pipe)
  -h, --help            show this help

The daytona emulator serves Daytona's control plane (under /api) and every sandbox's toolbox (under
/toolbox/<id>); the unmodified @daytonaio/sdk uses it with

  export DAYTONA_API_URL=http://127.0.0.1:PORT/api
  export DAYTONA_API_KEY=KEY

  --snapshot NAME=IMAGE a snapshot name and the image its sandboxes run (repeatable; default:
                        ${pairs(DEFAULT_DAYTONA_SNAPSHOTS)}; the first is the default snapshot); an image the engine has
                        also works as a snapshot name
  --api-key KEY         accept only this bearer key (repeatable; default: any non-empty key)
  --public-port N       the port clients reach it on, through a proxy on 127.0.0.1 in front of it:
                        the URLs it hands out (its own, every toolbox's) name it (opensandbox too)

The k8s emulator serves the Kubernetes API subset a workspace uses (namespaces, pods as containers,
persistent volume claims as named volumes, pod exec over WebSocket) and writes a kubeconfig for
@kubernetes/client-node's KubeConfig.loadFromDefault():

  export KUBECONFIG=PATH
  export K8S_API_URL=http://127.0.0.1:PORT
  export K8S_TOKEN=TOKEN

  --image NAME=IMAGE    a pod image name and the engine image it runs (repeatable; default:
                        ${pairs(DEFAULT_K8S_IMAGES)}); other names run as they are
  --token TOKEN         the only bearer token accepted (default: a random one)
  --kubeconfig PATH     where to write the kubeconfig (default: a temporary file removed on exit)

The opensandbox emulator serves OpenSandbox's lifecycle API (under /v1) and every sandbox's execd;
the unmodified @alibaba-group/opensandbox SDK uses it with

  export OPEN_SANDBOX_DOMAIN=http://127.0.0.1:PORT
  export OPEN_SANDBOX_API_KEY=KEY

  --image URI=IMAGE     an image URI and the engine image it runs (repeatable; default:
                        ${pairs(DEFAULT_OPENSANDBOX_IMAGES)}); an image the engine has also works
  --api-key KEY         accept only this OPEN-SANDBOX-API-KEY (repeatable; default: any non-empty key)

Stopping an emulator leaves the sandboxes' containers (and the k8s emulator's volumes); remove them with
  docker rm -f $(docker ps -aq --filter label=ws.emulator=VENDOR)
  docker volume rm $(docker volume ls -q --filter label=ws.emulator=k8s)`;

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
  if (name === undefined) return fail(`name the emulator to run: ${VENDORS.join(', ')}`, 2);
  if (!(VENDORS as readonly string[]).includes(name))
    return fail(`unknown emulator ${JSON.stringify(name)}; ${VENDORS.join(', ')} exist`, 2);
  const vendor = name as Vendor;
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
    if (vendor !== 'daytona' && vendor !== 'opensandbox')
      return fail('--public-port is a daytona and opensandbox option', 2);
  }
  // Which image-mapping option each emulator takes, and which options belong to one emulator only.
  const mapping: Record<Vendor, 'template' | 'snapshot' | 'image'> = {
    e2b: 'template',
    daytona: 'snapshot',
    k8s: 'image',
    opensandbox: 'image',
  };
  for (const option of ['template', 'snapshot', 'image'] as const)
    if (values[option] && mapping[vendor] !== option)
      return fail(
        `--${option} is not ${/^[eo]/.test(vendor) ? 'an' : 'a'} ${vendor} option; use --${mapping[vendor]}`,
        2,
      );
  if (vendor !== 'k8s' && (values.token !== undefined || values.kubeconfig !== undefined))
    return fail(`--${values.token !== undefined ? 'token' : 'kubeconfig'} is a k8s option`, 2);
  if (vendor === 'k8s' && values['api-key']) return fail('--api-key is not a k8s option; use --token', 2);
  const images: Record<string, string> = {};
  for (const pair of values.template ?? values.snapshot ?? values.image ?? []) {
    const separator = pair.indexOf('=');
    if (separator <= 0 || separator === pair.length - 1)
      return fail(`--${mapping[vendor]} takes ${vendor === 'e2b' ? 'ID' : 'NAME'}=IMAGE, not ${pair}`, 2);
    images[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  const apiKeys = values['api-key'];
  if (apiKeys?.some((key) => key === '')) return fail('--api-key takes a non-empty key', 2);
  if (values.token === '') return fail('--token takes a non-empty token', 2);
  const onLog = values.quiet
    ? (line: string) => {
        if (line.startsWith(`${vendor}:`)) process.stderr.write(`${line}\n`);
      }
    : (line: string) => process.stderr.write(`${line}\n`);

  let emulator: { env: Record<string, string>; close(): Promise<void> };
  try {
    const common = {
      port,
      ...(values.instance !== undefined ? { instance: values.instance } : {}),
      ...(values['no-network'] ? { network: false } : {}),
      ...(publicPort !== undefined ? { publicPort } : {}),
      onLog,
    };
    const keys = apiKeys ? { apiKeys } : {};
    switch (vendor) {
      case 'e2b':
        emulator = await startE2BEmulator({ ...common, ...keys, templates: images });
        break;
      case 'daytona':
        emulator = await startDaytonaEmulator({ ...common, ...keys, snapshots: images });
        break;
      case 'opensandbox':
        emulator = await startOpenSandboxEmulator({ ...common, ...keys, images });
        break;
      case 'k8s':
        emulator = await startK8sEmulator({
          ...common,
          images,
          ...(values.token !== undefined ? { token: values.token } : {}),
          ...(values.kubeconfig !== undefined ? { kubeconfigPath: values.kubeconfig } : {}),
        });
        break;
    }
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
