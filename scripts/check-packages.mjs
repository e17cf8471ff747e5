// The packages as a stranger gets them: packs every publishable package with pnpm (as a release
// does), checks each tarball (manifest, LICENSE, publint, attw), installs them with npm into scratch
// projects outside the repository, checks that each backend brings only its own vendor SDK, runs the
// READMEs' JavaScript examples there, and prints what each install weighs.
//
//   node scripts/check-packages.mjs            everything (the packages must be built)
//   node scripts/check-packages.mjs --pack-only   pack and check the tarballs, install nothing
//   node scripts/check-packages.mjs --keep        leave the scratch folder for a look
//   node scripts/check-packages.mjs --sizes-json FILE   also write the install sizes as JSON
import { execFile, spawn } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { allExamples, packageCheckScenario } from './readme-examples.mjs';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '..');
const args = new Set(process.argv.slice(2));
const packOnly = args.has('--pack-only');
const keep = args.has('--keep');
const sizesJson = process.argv[process.argv.indexOf('--sizes-json') + 1];
const bin = (name) => join(root, 'node_modules/.bin', name);

/** Vendor SDKs: each may come only with the backend that needs it. */
const VENDOR_SDKS = [
  'dockerode',
  'e2b',
  '@daytonaio/sdk',
  '@kubernetes/client-node',
  '@alibaba-group/opensandbox',
];
/**
 * Declares an MCP server whose command does not exist on a local workspace: `failed` is the error, which
 * says what to install when the MCP SDK is missing, and is the server's own failure when it is there.
 */
const MCP_SMOKE =
  "const failed = await workspace.addMcp({ name: 'smoke', transport: { type: 'stdio', command: 'ws-no-such-mcp-server' } }).then(() => undefined, (error) => error);";

/** What no install may bring: the PDF stack that once weighed 95 MB, and native canvas bindings. */
const NEVER = ['pdfjs-dist', 'pdf-lib', '@napi-rs/canvas', 'canvas'];

/** The installs a user makes, what each must bring and what it must not. */
const SCENARIOS = [
  {
    name: 'core',
    packages: ['@ws/core'],
    brings: [],
    forbids: [...VENDOR_SDKS, '@modelcontextprotocol/sdk'],
  },
  {
    // The MCP SDK is an optional peer of @ws/local: a workspace without MCP servers does without it,
    // and one that declares a server is told what to install.
    name: 'local',
    packages: ['@ws/core', '@ws/local'],
    brings: [],
    forbids: [...VENDOR_SDKS, '@modelcontextprotocol/sdk'],
    smoke: `${MCP_SMOKE} if (!String(failed?.message).includes('npm install @modelcontextprotocol/sdk')) throw new Error('expected the install hint, got: ' + failed?.message);`,
  },
  {
    name: 'local-mcp',
    packages: ['@ws/core', '@ws/local', '@modelcontextprotocol/sdk@1.32.2'],
    brings: ['@modelcontextprotocol/sdk'],
    forbids: VENDOR_SDKS,
    smoke: `${MCP_SMOKE} if (String(failed?.message).includes('is not installed')) throw new Error('the SDK was not found: ' + failed?.message);`,
  },
  { name: 'bwrap', packages: ['@ws/core', '@ws/bwrap'], brings: [], forbids: VENDOR_SDKS },
  {
    name: 'docker',
    packages: ['@ws/core', '@ws/docker'],
    brings: ['dockerode'],
    forbids: VENDOR_SDKS.filter((name) => name !== 'dockerode'),
  },
  {
    name: 'e2b',
    packages: ['@ws/core', '@ws/e2b'],
    brings: ['e2b'],
    forbids: VENDOR_SDKS.filter((name) => name !== 'e2b'),
  },
  {
    // What a user trying E2B without an account installs: the backend and the emulator (which runs
    // sandboxes on Docker). The examples that need the emulator run here.
    name: 'e2b-emulated',
    packages: ['@ws/core', '@ws/e2b', '@ws/emulators'],
    brings: ['e2b', 'dockerode'],
    forbids: VENDOR_SDKS.filter((name) => name !== 'e2b' && name !== 'dockerode'),
  },
  {
    name: 'daytona',
    packages: ['@ws/core', '@ws/daytona'],
    brings: ['@daytonaio/sdk'],
    forbids: VENDOR_SDKS.filter((name) => name !== '@daytonaio/sdk'),
  },
  {
    // The emulators bring dockerode (their sandboxes are containers) and e2b (whose bundle the E2B
    // emulator reads its schema from).
    name: 'daytona-emulated',
    packages: ['@ws/core', '@ws/daytona', '@ws/emulators'],
    brings: ['@daytonaio/sdk', 'dockerode'],
    forbids: VENDOR_SDKS.filter((name) => !['@daytonaio/sdk', 'dockerode', 'e2b'].includes(name)),
  },
  {
    name: 'k8s',
    packages: ['@ws/core', '@ws/k8s'],
    brings: ['@kubernetes/client-node'],
    forbids: VENDOR_SDKS.filter((name) => name !== '@kubernetes/client-node'),
  },
  {
    name: 'k8s-emulated',
    packages: ['@ws/core', '@ws/k8s', '@ws/emulators'],
    brings: ['@kubernetes/client-node', 'dockerode'],
    forbids: VENDOR_SDKS.filter((name) => !['@kubernetes/client-node', 'dockerode', 'e2b'].includes(name)),
  },
  {
    name: 'opensandbox',
    packages: ['@ws/core', '@ws/opensandbox'],
    brings: ['@alibaba-group/opensandbox'],
    forbids: VENDOR_SDKS.filter((name) => name !== '@alibaba-group/opensandbox'),
  },
  {
    name: 'opensandbox-emulated',
    packages: ['@ws/core', '@ws/opensandbox', '@ws/emulators'],
    brings: ['@alibaba-group/opensandbox', 'dockerode'],
    forbids: VENDOR_SDKS.filter((name) => !['@alibaba-group/opensandbox', 'dockerode', 'e2b'].includes(name)),
  },
  { name: 'cli', packages: ['@ws/core', '@ws/local', '@ws/cli'], brings: [], forbids: VENDOR_SDKS },
  // The adapters: npm installs each framework as the adapter's peer; no other framework comes along.
  {
    name: 'ai-sdk',
    packages: ['@ws/core', '@ws/local', '@ws/ai-sdk'],
    brings: ['ai'],
    forbids: [...VENDOR_SDKS, '@openai/agents', '@langchain/core'],
    smoke:
      "const { aiSdkTools } = await import('@ws/ai-sdk'); const { tools } = await aiSdkTools(workspace); if (typeof tools.Bash?.execute !== 'function') throw new Error('no Bash tool');",
  },
  {
    name: 'openai-agents',
    packages: ['@ws/core', '@ws/local', '@ws/openai-agents'],
    brings: ['@openai/agents'],
    forbids: [...VENDOR_SDKS, 'ai', '@langchain/core'],
    smoke:
      "const { openAiAgentTools } = await import('@ws/openai-agents'); const { tools } = await openAiAgentTools(workspace); if (!tools.some((tool) => tool.name === 'Bash' && tool.type === 'function')) throw new Error('no Bash tool');",
  },
  {
    name: 'langchain',
    packages: ['@ws/core', '@ws/local', '@ws/langchain'],
    brings: ['@langchain/core'],
    forbids: [...VENDOR_SDKS, 'ai', '@openai/agents'],
    smoke:
      "const { langChainTools } = await import('@ws/langchain'); const { tools } = await langChainTools(workspace); const bash = tools.find((tool) => tool.name === 'Bash'); const out = await bash.invoke({ command: 'echo adapter' }); if (!String(out).includes('adapter')) throw new Error('Bash said ' + out);",
  },
];

const failures = [];
function fail(message) {
  failures.push(message);
  console.log(`  FAIL ${message}`);
}
function step(title) {
  console.log(`\n--- ${title}`);
}

function publishable() {
  const found = [];
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group)).sort()) {
      const dir = join(root, group, name);
      let manifest;
      try {
        manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      } catch {
        continue;
      }
      if (!manifest.private) found.push({ dir, manifest });
    }
  }
  return found;
}

async function pack(pkg, into) {
  const { stdout } = await run(bin('pnpm'), ['pack', '--pack-destination', into], { cwd: pkg.dir });
  const tarball = stdout
    .trim()
    .split('\n')
    .find((line) => line.endsWith('.tgz'));
  if (!tarball) throw new Error(`pnpm pack printed no tarball for ${pkg.manifest.name}:\n${stdout}`);
  return tarball.trim();
}

async function tarballFiles(tarball) {
  const { stdout } = await run('tar', ['-tzf', tarball], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.split('\n').filter(Boolean);
}

function checkManifest(name, manifest, files) {
  const text = JSON.stringify(manifest);
  if (text.includes('workspace:')) fail(`${name}: the packed manifest still has a workspace: range`);
  if (text.includes('@ws/source'))
    fail(`${name}: the packed manifest points at TypeScript sources (@ws/source)`);
  for (const field of ['license', 'repository', 'homepage', 'bugs', 'keywords', 'engines', 'description'])
    if (!manifest[field]) fail(`${name}: the manifest has no ${field}`);
  // The scratch installs run no lifecycle scripts (see install): ours must need none.
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
    if (manifest.scripts?.[hook]) fail(`${name}: the packed manifest has a ${hook} script`);
  if (!files.includes('package/LICENSE')) fail(`${name}: the tarball has no LICENSE`);
  if (!files.includes('package/README.md')) fail(`${name}: the tarball has no README.md`);
  if (files.some((file) => /\.test\.|\/test\/|\/src\/.*\.ts$/.test(file)))
    fail(`${name}: the tarball carries tests or sources`);
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (typeof target === 'object' && target !== null && !('default' in target))
      fail(`${name}: export ${subpath} has no default condition (require() would say "not exported")`);
  }
}

async function lintTarball(name, tarball, manifest) {
  try {
    await run(bin('publint'), ['run', tarball, '--strict'], { cwd: tmpdir() });
    console.log(`  publint: clean`);
  } catch (error) {
    fail(`${name}: publint\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  }
  if (!manifest.types && !Object.values(manifest.exports ?? {}).some((target) => target?.types)) {
    console.log('  attw: no type declarations to check (not a library entry)');
    return;
  }
  // ESM-only packages: `require()` of them works on Node >= 20.19 (require(esm)), so the
  // CommonJS-resolves-to-ESM note is expected; every other problem fails.
  try {
    const { stdout } = await run(
      bin('attw'),
      [tarball, '--format', 'table-flipped', '--no-color', '--ignore-rules', 'cjs-resolves-to-esm'],
      { cwd: tmpdir(), maxBuffer: 4 * 1024 * 1024 },
    );
    console.log(`  attw: clean (${stdout.includes('No problems found') ? 'no problems found' : 'ok'})`);
  } catch (error) {
    fail(`${name}: attw\n${error.stdout ?? ''}${error.stderr ?? ''}`);
  }
}

/** Every package folder under node_modules, nested ones included: `[name, dir]`. */
function installedPackages(dir) {
  const found = [];
  const walk = (modules) => {
    let entries;
    try {
      entries = readdirSync(modules, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      if (entry.name.startsWith('@')) {
        for (const scoped of readdirSync(join(modules, entry.name), { withFileTypes: true })) {
          found.push([`${entry.name}/${scoped.name}`, join(modules, entry.name, scoped.name)]);
          walk(join(modules, entry.name, scoped.name, 'node_modules'));
        }
        continue;
      }
      found.push([entry.name, join(modules, entry.name)]);
      walk(join(modules, entry.name, 'node_modules'));
    }
  };
  walk(join(dir, 'node_modules'));
  return found;
}

async function sizeOf(dir) {
  const { stdout } = await run('du', ['-sk', dir]);
  return Number.parseInt(stdout, 10) * 1024;
}

const mb = (bytes) => (bytes < 1e6 ? `${Math.ceil(bytes / 1e3)} kB` : `${(bytes / 1e6).toFixed(1)} MB`);

/** Runs `node file` in `cwd`; resolves with its exit code, output and whether it exited by itself. */
function runNode(file, cwd, timeoutMs, extraArgs = []) {
  return runBin(process.execPath, [...extraArgs, file], cwd, timeoutMs);
}

/** Processes whose working directory is inside `dir` (what an example left running). */
function processesIn(dir) {
  const found = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`))
        found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()}`);
    } catch {}
  }
  return found;
}

async function dockerImage() {
  try {
    await run('docker', ['image', 'inspect', 'ws-workspace:bookworm'], { timeout: 20_000 });
    return undefined;
  } catch (error) {
    return `no Docker engine with ws-workspace:bookworm (${String(error.message).split('\n')[0]})`;
  }
}

async function runExamples(scenario, dir) {
  const wanted = allExamples(root).filter((example) => packageCheckScenario(example) === scenario);
  if (wanted.length === 0) return;
  const missing = scenario !== 'local' ? await dockerImage() : undefined;
  for (const example of wanted) {
    if (missing) {
      // The docs tests leave these examples to this check in CI: there a missing engine fails.
      if (process.env.CI === 'true') fail(`example ${example.id}: ${missing}`);
      else console.log(`  example ${example.id}: skipped (${missing})`);
      continue;
    }
    const file = join(dir, `example-${example.line}.mjs`);
    writeFileSync(file, example.code);
    const started = performance.now();
    const result = await runNode(file, dir, 180_000);
    const ms = Math.round(performance.now() - started);
    if (result.timedOut) fail(`example ${example.id} did not exit by itself within 180 s:\n${result.output}`);
    else if (result.code !== 0) fail(`example ${example.id} exited with ${result.code}:\n${result.output}`);
    else console.log(`  example ${example.id}: ran and exited by itself (${ms} ms)`);
    const left = processesIn(dir);
    if (left.length > 0) fail(`example ${example.id} left processes running:\n${left.join('\n')}`);
    if (scenario === 'docker') {
      const { stdout } = await run('docker', ['ps', '-aq', '--filter', 'label=ws.workspace.id']);
      const ours = [];
      for (const id of stdout.split('\n').filter(Boolean)) {
        const { stdout: inspect } = await run('docker', [
          'inspect',
          '--format',
          '{{ index .Config.Labels "ws.host.workdir" }}',
          id,
        ]).catch(() => ({ stdout: '' }));
        if (inspect.startsWith(dir)) ours.push(id);
      }
      if (ours.length > 0) fail(`example ${example.id} left containers: ${ours.join(' ')}`);
    }
  }
}

/** The installed `ws` command, as `npx ws demo` runs it: it must finish by itself and leave nothing. */
async function runCli(dir) {
  const result = await runNode(join(dir, 'node_modules/@ws/cli/dist/bin.js'), dir, 120_000, []);
  // `ws` with no command prints its usage and exits 1; `ws demo` is the tour.
  if (!result.output.includes('Usage: ws')) fail(`ws without a command printed no usage:\n${result.output}`);
  const demo = await runBin(join(dir, 'node_modules/.bin/ws'), ['demo'], dir, 120_000);
  if (demo.code !== 0) fail(`ws demo exited with ${demo.code}:\n${demo.output}`);
  else console.log(`  ws demo: ran and exited by itself (${demo.output.split('\n').length} lines)`);
  const left = processesIn(dir);
  if (left.length > 0) fail(`ws demo left processes running:\n${left.join('\n')}`);
}

/** `npx ws-docker-image` from the installed package finds its shipped build script. */
async function runImageBin(dir) {
  // npm extracts package files without their executable bit (bins aside): the bin runs the script with bash.
  const help = await runBin(join(dir, 'node_modules/.bin/ws-docker-image'), ['--help'], dir, 30_000);
  if (help.code !== 0 || !help.output.includes('--from'))
    fail(`ws-docker-image --help exited with ${help.code}:\n${help.output}`);
  const missing = await dockerImage();
  if (missing) {
    console.log(`  ws-docker-image: --help works; the image check skipped (${missing})`);
    return;
  }
  // The image CI built from the repository has the fingerprint of the shipped script: up to date.
  const result = await runBin(join(dir, 'node_modules/.bin/ws-docker-image'), [], dir, 600_000);
  if (result.code !== 0) fail(`ws-docker-image exited with ${result.code}:\n${result.output}`);
  else console.log(`  ws-docker-image: ${result.output.trim().split('\n').at(-1)}`);
}

/** Runs `file argv…` in `cwd`, killed after `timeoutMs`: its exit code, signal, output and whether it timed out. */
function runBin(file, argv, cwd, timeoutMs) {
  return new Promise((done) => {
    const child = spawn(file, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, output, timedOut });
    });
  });
}

/**
 * Installs the scenario's packages into a scratch project: a new one, or `into` (the project of the
 * scenario it adds a package to, as a user adds @ws/emulators to a project that has the backend).
 */
async function install(scenario, tarballs, scratch, into) {
  const dir = into ?? join(scratch, scenario.name);
  if (!into) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'package.json'),
      `${JSON.stringify({ name: `consumer-${scenario.name}`, private: true, type: 'module' }, null, 2)}\n`,
    );
  }
  // Ours from their tarballs; another package (an optional peer) from the registry, as a user adds it.
  const files = scenario.packages.map((name) => {
    if (!name.startsWith('@ws/')) return name;
    const tarball = tarballs.get(name);
    if (!tarball) throw new Error(`no tarball for ${name}`);
    return tarball;
  });
  const started = performance.now();
  // Without lifecycle scripts: ours have none (checkManifest), and what dependencies build for
  // themselves (dockerode's ssh2 compiles two optional native addons with node-gyp, ~10 s of CPU per
  // install) is not what these checks are about. Metadata the npm cache holds is used as it is.
  const flags = ['--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts', '--prefer-offline'];
  await run('npm', ['install', ...flags, ...files], {
    cwd: dir,
    maxBuffer: 16 * 1024 * 1024,
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const installed = installedPackages(dir);
  const names = new Set(installed.map(([name]) => name));
  const bytes = await sizeOf(join(dir, 'node_modules'));
  const largest = await Promise.all(
    installed
      .filter(([name]) => !name.startsWith('@ws/'))
      .map(async ([name, path]) => [name, await sizeOf(path)]),
  );
  largest.sort((a, b) => b[1] - a[1]);
  console.log(
    `  ${scenario.packages.join(' + ')}: ${mb(bytes)} in node_modules, ${installed.length} packages (npm install ${seconds} s)`,
  );
  console.log(
    `  largest: ${largest
      .slice(0, 4)
      .map(([name, size]) => `${name} ${mb(size)}`)
      .join(', ')}`,
  );
  for (const name of scenario.brings)
    if (!names.has(name)) fail(`${scenario.name}: ${name} was not installed`);
  for (const name of [...scenario.forbids, ...NEVER])
    if (names.has(name))
      fail(`${scenario.name}: installing ${scenario.packages.join(' + ')} brought ${name}`);
  return { dir, bytes, count: installed.length };
}

/** Runs an adapter's smoke check in its install: a LocalWorkspace handed to the framework, then closed. */
async function runSmoke(scenario, dir) {
  const script = [
    "import { mkdtempSync, rmSync } from 'node:fs';",
    "import { tmpdir } from 'node:os';",
    "import { join } from 'node:path';",
    "import { LocalWorkspace } from '@ws/local';",
    "const folder = mkdtempSync(join(tmpdir(), 'ws-smoke-'));",
    "const workspace = new LocalWorkspace({ hostWorkdir: join(folder, 'work') });",
    'await workspace.initialize();',
    `try { ${scenario.smoke} } finally { await workspace.close(); rmSync(folder, { recursive: true, force: true }); }`,
  ].join('\n');
  try {
    await run(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, timeout: 60_000 });
    console.log(`  ${scenario.name}: the smoke check passed (${scenario.packages.at(-1)})`);
  } catch (error) {
    fail(`${scenario.name}: the smoke check failed:\n${error.stderr ?? error.message}`);
  }
}

async function checkRequire(dir) {
  const script = [
    "const local = require('@ws/local');",
    "const core = require('@ws/core');",
    "if (typeof local.LocalWorkspace !== 'function' || typeof core.WsError !== 'function') process.exit(1);",
  ].join(' ');
  const [major, minor] = process.versions.node.split('.').map(Number);
  const supported = major > 20 || (major === 20 && minor >= 19);
  try {
    await run(process.execPath, ['-e', script], { cwd: dir });
    console.log(`  require('@ws/local') works on Node ${process.versions.node}`);
    if (!supported) fail('require() of an ES module worked on a Node without require(esm)?');
  } catch (error) {
    const text = `${error.stderr ?? error.message}`;
    if (supported) fail(`require('@ws/local') failed on Node ${process.versions.node}:\n${text}`);
    else if (!/ES Module|ERR_REQUIRE_ESM/.test(text))
      fail(`require('@ws/local') on Node ${process.versions.node} does not say the package is ESM:\n${text}`);
    else console.log(`  require('@ws/local') on Node ${process.versions.node} says: ES module only`);
  }
}

async function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'ws-packages-'));
  const tarballDir = join(scratch, 'tarballs');
  mkdirSync(tarballDir);
  const tarballs = new Map();
  try {
    step(`pack (pnpm) into ${tarballDir}`);
    for (const pkg of publishable()) {
      const name = pkg.manifest.name;
      const tarball = await pack(pkg, tarballDir);
      tarballs.set(name, tarball);
      const files = await tarballFiles(tarball);
      const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json']);
      const manifest = JSON.parse(stdout);
      console.log(`${name}: ${mb(await sizeOf(tarball))} packed, ${files.length} files`);
      checkManifest(name, manifest, files);
      await lintTarball(name, tarball, manifest);
    }
    if (!packOnly) {
      const sizes = [];
      const projects = new Map();
      for (const scenario of SCENARIOS) {
        // `<vendor>-emulated` adds @ws/emulators to the `<vendor>` project (checked before it).
        const into = scenario.name.endsWith('-emulated')
          ? projects.get(scenario.name.slice(0, -'-emulated'.length))
          : undefined;
        step(
          `npm install ${scenario.packages.join(' ')} (scratch project ${into ?? join(scratch, scenario.name)})`,
        );
        const result = await install(scenario, tarballs, scratch, into);
        projects.set(scenario.name, result.dir);
        sizes.push([scenario.packages.join(' + '), result]);
        if (scenario.name === 'local') await checkRequire(result.dir);
        if (scenario.name === 'cli') await runCli(result.dir);
        if (scenario.name === 'docker') await runImageBin(result.dir);
        if (scenario.smoke) await runSmoke(scenario, result.dir);
        await runExamples(scenario.name, result.dir);
      }
      step('install sizes (npm, from the packed tarballs)');
      for (const [label, { bytes, count }] of sizes)
        console.log(`  ${label.padEnd(34)} ${mb(bytes).padStart(9)}  ${String(count).padStart(4)} packages`);
      if (args.has('--sizes-json'))
        writeFileSync(
          sizesJson,
          `${JSON.stringify(
            sizes.map(([label, { bytes, count }]) => ({ label, bytes, count })),
            null,
            2,
          )}\n`,
        );
    }
  } finally {
    if (keep) console.log(`\nscratch kept at ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
  if (failures.length > 0) {
    console.log(`\n${failures.length} package check(s) failed`);
    process.exit(1);
  }
  console.log('\npackages: every check passed');
}

main().catch((error) => {
  console.error(`check-packages: ${error.stack ?? error}`);
  process.exit(2);
});
