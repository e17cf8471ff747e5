#!/usr/bin/env node
// npm run test:live -- <vendor>: the conformance suite against the vendor's real service (E2B,
// Daytona, a Kubernetes cluster, an OpenSandbox server) instead of its emulator. Everything the run
// creates carries one owner tag; whatever is left of it is removed at the end, when a case fails,
// and when the run is interrupted (SIGINT, SIGTERM). Without the variables the vendor needs it says
// in one line what to set, exits 2 and creates nothing.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** An import of a package's build (`packages/<dir>/dist/index.js`) or of a dependency it resolves. */
async function fromPackage(dir, specifier) {
  const base = join(root, 'packages', dir);
  const path = specifier
    ? createRequire(join(base, 'package.json')).resolve(specifier)
    : join(base, 'dist', 'index.js');
  return import(pathToFileURL(path).href);
}

/** Deletes the Pods and PVCs labelled with `owner` in the namespace; returns their names. */
async function removeK8sOwned(owner) {
  const k8s = await fromPackage('k8s', '@kubernetes/client-node');
  const config = new k8s.KubeConfig();
  config.loadFromFile(process.env.WS_K8S_REAL_KUBECONFIG);
  const core = config.makeApiClient(k8s.CoreV1Api);
  const namespace = process.env.WS_K8S_REAL_NAMESPACE || 'ws-test';
  const labelSelector = `ws.owner=${owner}`;
  const pods = (await core.listNamespacedPod({ namespace, labelSelector })).items;
  const claims = (await core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector })).items;
  await Promise.all([
    ...pods.map((pod) =>
      core.deleteNamespacedPod({ namespace, name: pod.metadata.name, gracePeriodSeconds: 0 }),
    ),
    ...claims.map((claim) =>
      core.deleteNamespacedPersistentVolumeClaim({ namespace, name: claim.metadata.name }),
    ),
  ]);
  return [
    ...pods.map((pod) => `pod/${pod.metadata.name}`),
    ...claims.map((claim) => `pvc/${claim.metadata.name}`),
  ];
}

/**
 * Per vendor: the variables it needs (all of them), the suite's name, what a run costs, and how to
 * remove what an owner tag holds.
 */
const VENDORS = {
  e2b: {
    needs: ['E2B_API_KEY'],
    also: 'E2B_DOMAIN or E2B_API_URL for another deployment',
    suite: 'e2b \\(E2B service\\)',
    cost: 'E2B bills each sandbox by the second while it runs',
    reap: async (owner) => {
      const { killOwnedSandboxes } = await fromPackage('e2b');
      return killOwnedSandboxes(owner, {
        apiKey: process.env.E2B_API_KEY,
        ...(process.env.E2B_API_URL ? { apiUrl: process.env.E2B_API_URL } : {}),
        ...(process.env.E2B_DOMAIN ? { domain: process.env.E2B_DOMAIN } : {}),
      });
    },
  },
  daytona: {
    needs: ['DAYTONA_API_KEY'],
    also: 'DAYTONA_API_URL for another deployment',
    suite: 'daytona \\(Daytona service\\)',
    cost: 'Daytona bills each sandbox by the second while it runs (and its disk while it is stopped)',
    reap: async (owner) => {
      const { deleteOwnedSandboxes } = await fromPackage('daytona');
      return deleteOwnedSandboxes(owner, {
        apiKey: process.env.DAYTONA_API_KEY,
        ...(process.env.DAYTONA_API_URL ? { apiUrl: process.env.DAYTONA_API_URL } : {}),
      });
    },
  },
  k8s: {
    needs: ['WS_K8S_REAL_KUBECONFIG'],
    also: 'WS_K8S_REAL_NAMESPACE (default ws-test) and WS_K8S_REAL_IMAGE (an image with node 18+)',
    suite: 'k8s \\(real cluster\\)',
    cost: "the cluster's Pods and claims cost what the cluster costs",
    reap: removeK8sOwned,
  },
  opensandbox: {
    needs: ['OPEN_SANDBOX_DOMAIN', 'OPEN_SANDBOX_API_KEY'],
    also: 'OPEN_SANDBOX_IMAGE for an image with node 18+',
    suite: 'opensandbox \\(OpenSandbox server\\)',
    cost: "the server's sandboxes cost what its hosts cost",
    reap: async (owner) => {
      const { killOwnedSandboxes } = await fromPackage('opensandbox');
      return killOwnedSandboxes(owner, {
        domain: process.env.OPEN_SANDBOX_DOMAIN,
        apiKey: process.env.OPEN_SANDBOX_API_KEY,
      });
    },
  },
};

const USAGE = `usage: npm run test:live -- <${Object.keys(VENDORS).join('|')}>`;

function fail(message, code) {
  process.stderr.write(`test:live: ${message}\n`);
  process.exit(code);
}

const [name, ...extra] = process.argv.slice(2);
if (name === undefined || name === '--help' || name === '-h') fail(USAGE, name === undefined ? 2 : 0);
const vendor = VENDORS[name];
if (!vendor) fail(`unknown vendor ${JSON.stringify(name)}; ${USAGE.slice('usage: '.length)}`, 2);
if (extra.length > 0) fail(`unexpected argument ${extra[0]}; ${USAGE.slice('usage: '.length)}`, 2);
const missing = vendor.needs.filter((key) => !process.env[key]);
if (missing.length > 0)
  fail(
    `set ${missing.join(' and ')} to run the ${name} conformance suite against the real service (${vendor.cost}; see README.md, "Against the real services")`,
    2,
  );

const owner = `ws-live-${randomBytes(4).toString('hex')}`;
const tags = [owner, `${owner}-2`];

const setup = spawnSync(process.execPath, [join(root, 'scripts', 'setup.mjs')], {
  cwd: root,
  stdio: 'inherit',
});
if (setup.status !== 0) fail(`setup failed (exit ${setup.status ?? setup.signal})`, 1);
if (!existsSync(join(root, 'packages', name, 'dist', 'index.js'))) fail(`packages/${name} is not built`, 1);

process.stderr.write(
  `test:live: ${name}: everything this run creates is tagged ws.owner=${owner} (or ${owner}-2) and removed at the end; ${vendor.cost}. Also read: ${vendor.also}.\n`,
);
const started = Date.now();
// Every case runs against the service (no conformance matrix: a live run is the one time each vendor's
// real service meets the whole suite). One test file at a time, so that a file's clean-up (every sandbox of the run's owner) never
// removes a sandbox another file is using, and the run stays within the service's concurrency quota.
const child = spawn(
  process.execPath,
  [
    join(root, 'node_modules', 'vitest', 'vitest.mjs'),
    'run',
    '--project',
    `@ws/${name}`,
    '--no-file-parallelism',
    '-t',
    vendor.suite,
    `packages/${name}/test/contract`,
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, WS_LIVE: name, WS_LIVE_OWNER: owner, WS_CONFORMANCE_MATRIX: 'off' },
  },
);

let interrupted;
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    // The tests end first (their own clean-up runs), then the reaping below.
    interrupted = signal;
    child.kill(signal);
  });

const code = await new Promise((resolve) =>
  child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))),
);
let reapFailed = false;
for (const tag of tags) {
  try {
    const removed = await vendor.reap(tag);
    process.stderr.write(
      `test:live: ${tag}: ${removed.length === 0 ? 'nothing was left' : `removed what was left: ${removed.join(', ')}`}\n`,
    );
  } catch (error) {
    reapFailed = true;
    process.stderr.write(
      `test:live: ${tag}: could not list or remove what is left (${error instanceof Error ? error.message : String(error)}); remove what carries ws.owner=${tag} by hand\n`,
    );
  }
}
process.stderr.write(
  `test:live: ${name}: ${code === 0 ? 'passed' : interrupted ? `interrupted (${interrupted})` : 'failed'} in ${Math.round((Date.now() - started) / 1000)} s\n`,
);
process.exit(code !== 0 ? code : reapFailed ? 1 : 0);
