import { type GcReport, isWsError } from '@ws/core';
import { BACKEND_TABLE, loadBackend } from './backend-table.js';
import { CONFIG_HELP } from './backends.js';
import { formatDuration, parseAge, parseCommand, parseDuration, UsageError } from './cli-args.js';
import { untilAborted } from './deadline.js';
import { Progress } from './progress.js';
import { type BackendName, type BackendSettings, resolveSettings } from './settings.js';

const REAP_BACKEND_HELP = `Backend options:
  -b, --backend NAME       local (default), bwrap, docker, e2b, daytona, k8s or opensandbox
                                                                                 [WS_BACKEND]
  --config FILE            read settings from this JSON file (see below)            [WS_CONFIG]
  --owner TAG              only what carries this owner tag (docker, e2b, daytona, k8s,
                           opensandbox; local and bwrap files carry none)            [WS_OWNER]
  --root DIR               local, bwrap: a workdir or a folder of workdirs to search (repeatable;
                           default: --workdir, needed for local)
  --workdir DIR            local, bwrap: the same as one --root                     [WS_WORKDIR]
  --api-key KEY            e2b, daytona or opensandbox API key (else the vendor's variable)
  --api-url URL            e2b or daytona API URL; opensandbox server (host:port or URL)
  --namespace NAME         Kubernetes namespace (k8s)
  --kubeconfig FILE        kubeconfig file (k8s; default: the usual lookup)
  --timeout TIME           give up after TIME (default 5m)
  --json                   print the result as one JSON object
  -h, --help               show this text

${CONFIG_HELP}`;

export const LS_HELP = `Usage: ws ls [options]

Lists what workspaces of one backend left that carries this project's marks (containers, sandboxes,
Pods, runtime folders, temporary files of killed writers), with its kind, name, workspace id, owner
tag, the user and agent it was opened for (when a workspace manager opened it), how long it has been idle (since it was created or last attached) and whether a live process
uses it. Nothing is removed.

${REAP_BACKEND_HELP}`;

export const GC_HELP = `Usage: ws gc [--older-than TIME] [--dry-run] [--owner TAG] [options]

Removes what workspaces of one backend left behind (a crashed service's containers or sandboxes,
temporary files of killed writers) once idle for --older-than and used by no live process. An open
workspace is never removed. Exits 1 when something could not be removed.

Options:
  --older-than TIME        only what has been idle at least TIME (default 2h; 0: any age)
  --dry-run                remove nothing; list what would be removed

${REAP_BACKEND_HELP}`;

const REAP_OPTIONS = {
  backend: { type: 'string', short: 'b' },
  config: { type: 'string' },
  owner: { type: 'string' },
  root: { type: 'string', multiple: true },
  workdir: { type: 'string' },
  'api-key': { type: 'string' },
  'api-url': { type: 'string' },
  namespace: { type: 'string' },
  kubeconfig: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const GC_OPTIONS = {
  ...REAP_OPTIONS,
  'older-than': { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const;

/** What each backend's reaper looks through, for the progress line. */
const LOOKING_AT: Record<BackendName, string> = {
  local: 'workdirs',
  bwrap: 'runtime and temporary folders',
  docker: 'containers',
  e2b: 'sandboxes',
  daytona: 'sandboxes',
  k8s: 'Pods',
  opensandbox: 'sandboxes',
};

/** `ws ls`: the reaper's dry run that removes nothing (every resource is kept, young or in use). */
export async function runLs(args: string[], signal: AbortSignal): Promise<number> {
  const { values } = parseCommand('ls', args, REAP_OPTIONS);
  if (values.help) {
    process.stdout.write(LS_HELP);
    return 0;
  }
  const { settings, report } = await reap('ls', values, { olderThanMs: Number.POSITIVE_INFINITY }, signal);
  const resources = report.kept.map(
    ({ kind, name, workspaceId, owner, userId, agentId, idleMs, reason }) => ({
      kind,
      name,
      workspaceId,
      owner,
      ...(userId !== undefined ? { userId } : {}),
      ...(agentId !== undefined ? { agentId } : {}),
      idleMs: Math.round(idleMs),
      inUse: reason === 'in-use',
    }),
  );
  if (values.json) {
    print({ backend: settings.backend, ...(settings.owner ? { owner: settings.owner } : {}), resources });
    return 0;
  }
  if (resources.length === 0) {
    process.stdout.write(`Nothing left by workspaces on the ${scope(settings)}.\n`);
    return 0;
  }
  process.stdout.write(
    table(
      ['KIND', 'NAME', 'WORKSPACE', 'OWNER', 'USER', 'AGENT', 'IDLE', 'STATE'],
      resources.map((item) => [
        item.kind,
        item.name,
        item.workspaceId ?? '-',
        item.owner ?? '-',
        item.userId ?? '-',
        item.agentId ?? '-',
        formatDuration(item.idleMs),
        item.inUse ? 'in use' : 'idle',
      ]),
    ),
  );
  return 0;
}

/** `ws gc`: the backend's reaper, with a table (or JSON) of what it removed and kept. */
export async function runGc(args: string[], signal: AbortSignal): Promise<number> {
  const { values } = parseCommand('gc', args, GC_OPTIONS);
  if (values.help) {
    process.stdout.write(GC_HELP);
    return 0;
  }
  const olderThan = values['older-than'] ?? '2h';
  const olderThanMs = parseAge('older-than', olderThan);
  const dryRun = values['dry-run'] === true;
  const { settings, report } = await reap('gc', values, { olderThanMs, dryRun }, signal);
  const failed = report.kept.filter((item) => item.reason === 'failed');
  if (values.json) {
    print({
      backend: settings.backend,
      ...(settings.owner ? { owner: settings.owner } : {}),
      olderThanMs,
      dryRun: report.dryRun,
      removed: report.removed.map((item) => ({ ...item, idleMs: Math.round(item.idleMs) })),
      kept: report.kept.map(({ error, ...item }) => ({
        ...item,
        idleMs: Math.round(item.idleMs),
        ...(error ? { error: { code: error.code, message: error.message } } : {}),
      })),
    });
    return failed.length > 0 ? 1 : 0;
  }
  if (report.listed.length === 0) {
    process.stdout.write(`Nothing left by workspaces on the ${scope(settings)}.\n`);
    return 0;
  }
  const removedLabel = dryRun ? 'would remove' : 'removed';
  const removedCount = `${report.removed.length} ${dryRun ? 'would be removed' : 'removed'}`;
  const note = (item: GcReport['kept'][number]): string => {
    if (item.reason === 'in-use') return 'in use';
    if (item.reason === 'young') return `idle for less than ${olderThan}`;
    return item.error ? `${item.error.code}: ${item.error.message.split('\n')[0]}` : 'failed';
  };
  const row = (action: string, item: GcReport['listed'][number], text: string) => [
    action,
    item.kind,
    item.name,
    item.workspaceId ?? '-',
    item.owner ?? '-',
    formatDuration(item.idleMs),
    text,
  ];
  process.stdout.write(
    table(
      ['ACTION', 'KIND', 'NAME', 'WORKSPACE', 'OWNER', 'IDLE', 'NOTE'],
      [
        ...report.removed.map((item) => row(removedLabel, item, '')),
        ...report.kept.map((item) => row(item.reason === 'failed' ? 'failed' : 'kept', item, note(item))),
      ],
    ),
  );
  const counts = (reason: string) => report.kept.filter((item) => item.reason === reason).length;
  process.stdout.write(
    `${removedCount}, ${report.kept.length} kept (${counts('in-use')} in use, ${counts('young')} younger than ${olderThan}, ${failed.length} failed).\n`,
  );
  return failed.length > 0 ? 1 : 0;
}

type ReapValues = Partial<Record<keyof typeof REAP_OPTIONS, string | string[] | boolean>>;

async function reap(
  command: 'ls' | 'gc',
  values: ReapValues,
  options: { olderThanMs: number; dryRun?: boolean },
  signal: AbortSignal,
): Promise<{ settings: BackendSettings; report: GcReport }> {
  const timeout = (values.timeout as string | undefined) ?? '5m';
  const timeoutMs = parseDuration('timeout', timeout);
  const { json: _json, help: _help, timeout: _timeout, ...flags } = values;
  const settings = resolveSettings(flags as Parameters<typeof resolveSettings>[0]);
  const { backend } = settings;
  if (flags.workdir !== undefined && backend !== 'local' && backend !== 'bwrap') {
    throw new UsageError(
      `--workdir does not apply to ws ${command} on the ${backend} backend (only local, bwrap)`,
    );
  }
  const module = await loadBackend(backend);
  const deadline = AbortSignal.timeout(timeoutMs);
  try {
    const stop = AbortSignal.any([signal, deadline]);
    const report = await Progress.around(
      `looking through the ${backend} backend's ${LOOKING_AT[backend]}`,
      () =>
        untilAborted(
          BACKEND_TABLE[backend].reap(
            module,
            {
              olderThanMs: options.olderThanMs,
              dryRun: command === 'ls' ? true : options.dryRun === true,
              ...(settings.owner ? { owner: settings.owner } : {}),
              signal: stop,
            },
            settings,
          ),
          stop,
        ),
    );
    return { settings, report };
  } catch (error) {
    if (deadline.aborted && !signal.aborted) {
      throw new Error(
        `ws ${command}: the ${backend} backend did not finish within ${timeout} (see --timeout)`,
      );
    }
    // Bad options, or a --root that is missing or not a folder: the command line's fault.
    if (isWsError(error) && ['INVALID_ARGUMENT', 'NOT_FOUND', 'NOT_A_DIRECTORY'].includes(error.code))
      throw new UsageError(`ws ${command}: ${error.message}`);
    throw error;
  }
}

function scope(settings: BackendSettings): string {
  return `${settings.backend} backend${settings.owner ? ` with owner tag ${settings.owner}` : ''}`;
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Left-aligned columns two spaces apart; the last column is not padded. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}
