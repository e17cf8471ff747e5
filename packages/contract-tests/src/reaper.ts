import { type GcReport, generateId, isWsError, type Workspace } from '@ws/core';
import { afterAll, describe, expect, it } from 'vitest';
import { crashWhileOpen, type HostProcess, hostProblem, startHost } from './reaper-hosts.js';
import type { ReaperCaseId, ReaperCreateOptions, ReaperTarget, UnmarkedResource } from './reaper-target.js';

/** Older than anything a case makes: every orphan is `young` for it. */
const AGES_MS = 10 * 365 * 24 * 3_600_000;

/** An attachment record of a process on another machine (machine id, pid, object). */
const REMOTE_RECORD = '0123456789ab-1-remote00';

/** What the cases share, made once, on first use, all at once. */
interface Made {
  /** Owner of the orphans the decision-table cases reap (`orphans`), and of `unmarked`. */
  readonly owner: string;
  /** The orphans of `owner`: workspace id by way of being left (`crashed`, and the target's others). */
  readonly orphans: Readonly<Record<string, string>>;
  readonly unmarked: UnmarkedResource | undefined;
  /** Another owner, with one orphan of a killed host. */
  readonly otherOwner: string;
  readonly otherOrphan: string;
  /** A third owner, with one open workspace. */
  readonly openOwner: string;
  readonly open: Workspace;
  readonly openId: string;
}

/**
 * Registers the reaper suite for one backend inside the calling test file: the decision every
 * backend's `gc` makes, seen from outside against the real engine. Case titles start with a stable id
 * (`[reaper.young] …`, see `REAPER_CASES`), the same on every backend. When
 * `target.skipReason()` returns a reason, every case is skipped and the reason printed.
 *
 * The cases share the workspaces they reap (made together by the first case that runs, each group
 * under an owner tag of its own, so that each `gc` sees only its group); `reaper.removed` removes
 * them, so it runs after the cases that look at them. After the suite, `target.cleanup` removes
 * whatever carries one of its owner tags.
 *
 * ```ts
 * await registerReaperSuite({
 *   name: 'docker',
 *   kind: 'container',
 *   create: ({ workspaceId, owner }) => new DockerWorkspace({ workspaceId, owner }),
 *   gc: (options) => gcDocker(options),
 *   …
 * });
 * ```
 */
export async function registerReaperSuite(target: ReaperTarget): Promise<void> {
  const reason = (await target.skipReason?.()) ?? hostProblem(target.process);
  if (reason) {
    console.warn(`[reaper] ${target.name}: skipped: ${reason}`);
    describe(`reaper: ${target.name}`, () => {
      it.skip(`skipped: ${reason}`, () => {});
    });
    return;
  }
  const runId = generateId().slice(0, 8);
  const ownerOf = (group: string) => `ws-reaper-${runId}-${group}`;
  const owners = new Set<string>();
  const hosts: HostProcess[] = [];
  const opened: Workspace[] = [];
  const timeoutMs = target.caseTimeoutMs ?? 180_000;

  const open = async (create: ReaperCreateOptions): Promise<Workspace> => {
    owners.add(create.owner);
    const workspace = await target.create(create);
    opened.push(workspace);
    await workspace.initialize();
    return workspace;
  };
  const crash = async (create: ReaperCreateOptions): Promise<void> => {
    owners.add(create.owner);
    await crashWhileOpen(target.process, create);
    await target.afterCrash?.(create.workspaceId);
  };

  let made: Promise<Made> | undefined;
  const make = (): Promise<Made> => {
    made ??= (async () => {
      const owner = ownerOf('a');
      const otherOwner = ownerOf('b');
      const openOwner = ownerOf('c');
      for (const tag of [owner, otherOwner, openOwner]) owners.add(tag);
      const orphans: Record<string, string> = { crashed: `${runId}-crashed` };
      for (const way of Object.keys(target.orphans ?? {})) orphans[way] = `${runId}-${way}`;
      const otherOrphan = `${runId}-other`;
      const openId = `${runId}-open`;
      const unmarked = target.unmarked?.(owner);
      const workspace = open({ workspaceId: openId, owner: openOwner });
      await Promise.all([
        unmarked,
        workspace,
        crash({ workspaceId: orphans.crashed as string, owner }),
        crash({ workspaceId: otherOrphan, owner: otherOwner }),
        ...Object.entries(target.orphans ?? {}).map(([way, leave]) =>
          leave({ workspaceId: orphans[way] as string, owner }),
        ),
      ]);
      // Settled as seen from outside: a sandbox still pausing after its close is being changed (in use).
      await Promise.all(
        [...Object.values(orphans), otherOrphan].map((workspaceId) => target.resources(workspaceId)),
      );
      return {
        owner,
        orphans,
        unmarked: await unmarked,
        otherOwner,
        otherOrphan,
        openOwner,
        open: await workspace,
        openId,
      };
    })();
    return made;
  };

  /** The report's resources of the target's kind (a backend may list more kinds, such as volumes). */
  const ofKind = <T extends { kind: string }>(resources: readonly T[]) =>
    resources.filter((resource) => resource.kind === target.kind);
  /** Why each kept resource of the target's kind was kept, by workspace id. */
  const reasons = (report: GcReport) =>
    Object.fromEntries(ofKind(report.kept).map((resource) => [resource.workspaceId, resource.reason]));
  /** The workspace ids of the removed resources of the target's kind, sorted. */
  const removed = (report: GcReport) =>
    ofKind(report.removed)
      .map((resource) => resource.workspaceId)
      .sort();
  const names = (report: GcReport) => report.listed.map((resource) => resource.name);
  const still = async (workspaceIds: readonly string[]) => {
    for (const workspaceId of workspaceIds)
      expect(await target.resources(workspaceId), `${workspaceId} is gone`).not.toEqual([]);
  };

  describe(`reaper: ${target.name}`, () => {
    afterAll(async () => {
      for (const host of hosts) host.kill();
      await Promise.allSettled(opened.map((workspace) => workspace.close()));
      await Promise.allSettled([...owners].map((owner) => target.cleanup(owner)));
    }, timeoutMs);

    reaperCase(
      'reaper.young',
      'orphans unused for less than the age are kept `young`, and nothing is removed',
      async () => {
        const { owner, orphans } = await make();
        const report = await target.gc({ owner, olderThanMs: AGES_MS });
        expect(report.dryRun).toBe(false);
        expect(report.removed).toEqual([]);
        expect(reasons(report)).toEqual(
          Object.fromEntries(Object.values(orphans).map((workspaceId) => [workspaceId, 'young'])),
        );
        await still(Object.values(orphans));
      },
    );

    reaperCase(
      'reaper.dry-run',
      'a dry run lists every orphan older than the age as removed, and removes nothing',
      async () => {
        const { owner, orphans, unmarked } = await make();
        const report = await target.gc({ owner, olderThanMs: 0, dryRun: true });
        expect(report.dryRun).toBe(true);
        expect(removed(report)).toEqual(Object.values(orphans).sort());
        for (const resource of ofKind(report.removed)) expect(resource.owner).toBe(owner);
        expect(reasons(report)).toEqual({});
        if (unmarked) expect(names(report)).not.toContain(unmarked.name);
        await still(Object.values(orphans));
      },
    );

    reaperCase(
      'reaper.in-use',
      'an open workspace is kept `in-use` however old, and keeps working',
      async () => {
        const { openOwner, open, openId } = await make();
        const report = await target.gc({ owner: openOwner, olderThanMs: 0 });
        expect(report.removed).toEqual([]);
        expect(reasons(report)).toEqual({ [openId]: 'in-use' });
        expect(open.state).toBe('ready');
        expect((await open.getSandbox().exec(['echo', 'alive'])).stdoutText).toBe('alive\n');
        await still([openId]);
      },
    );

    reaperCase(
      'reaper.remote-host',
      'a fresh attachment record of a host on another machine keeps an orphan `in-use` until it goes stale',
      async (skip) => {
        const records = target.records;
        if (!records) return skip('the target gives no way to write attachment records (target.records)');
        const { otherOwner: owner, otherOrphan } = await make();
        const gcDry = () => target.gc({ owner, olderThanMs: 0, dryRun: true });
        // The killed host was a process of this machine: its record is known dead.
        expect(removed(await gcDry())).toEqual([otherOrphan]);
        await records.plant(otherOrphan, REMOTE_RECORD);
        try {
          const held = await gcDry();
          expect(removed(held)).toEqual([]);
          expect(reasons(held)).toEqual({ [otherOrphan]: 'in-use' });
        } finally {
          // The other host stops touching its record: as old as a stale one.
          await records.age(otherOrphan);
        }
        const stale = await gcDry();
        expect(removed(stale)).toEqual([otherOrphan]);
        expect(reasons(stale)).toEqual({});
      },
    );

    reaperCase(
      'reaper.owners-apart',
      "gc with an owner removes that owner's orphans and never another owner's",
      async () => {
        const { otherOwner, otherOrphan, owner, orphans, openOwner, openId } = await make();
        const report = await target.gc({ owner: otherOwner, olderThanMs: 0 });
        expect(removed(report)).toEqual([otherOrphan]);
        for (const resource of report.listed) expect(resource.owner, resource.name).toBe(otherOwner);
        expect(await target.resources(otherOrphan)).toEqual([]);
        await still([...Object.values(orphans), openId]);
        // The other owners' resources are still theirs to reap.
        expect(removed(await target.gc({ owner, olderThanMs: 0, dryRun: true }))).toEqual(
          Object.values(orphans).sort(),
        );
        expect(reasons(await target.gc({ owner: openOwner, olderThanMs: 0, dryRun: true }))).toEqual({
          [openId]: 'in-use',
        });
      },
    );

    reaperCase(
      'reaper.aborted-before',
      'a signal aborted before gc starts ends it with `ABORTED`, and removes nothing',
      async () => {
        const { owner, orphans } = await make();
        const error = await caught(target.gc({ owner, olderThanMs: 0, signal: AbortSignal.abort() }));
        expect(isWsError(error, 'ABORTED'), String(error)).toBe(true);
        await still(Object.values(orphans));
      },
    );

    reaperCase(
      'reaper.aborted-while',
      'a signal aborted while gc runs ends it with `ABORTED` and the report so far, and removes nothing',
      async () => {
        const { owner, orphans } = await make();
        const controller = new AbortController();
        const running = caught(target.gc({ owner, olderThanMs: 0, signal: controller.signal }));
        // Past its checks of the options, before its first answer from the engine.
        controller.abort();
        const error = await running;
        expect(isWsError(error, 'ABORTED'), `${isWsError(error) ? error.code : ''} ${String(error)}`).toBe(
          true,
        );
        // What it did until then: nothing, as it was aborted before its first decision.
        const report = isWsError(error) ? (error.details?.report as GcReport | undefined) : undefined;
        expect(report?.removed).toEqual([]);
        await still(Object.values(orphans));
      },
    );

    reaperCase(
      'reaper.removed',
      'orphans older than the age are removed; nothing without the marks is touched',
      async () => {
        const { owner, orphans, unmarked } = await make();
        const report = await target.gc({ owner, olderThanMs: 0 });
        expect(report.dryRun).toBe(false);
        expect(removed(report)).toEqual(Object.values(orphans).sort());
        for (const resource of ofKind(report.removed)) expect(resource.owner).toBe(owner);
        expect(reasons(report)).toEqual({});
        for (const workspaceId of Object.values(orphans))
          expect(await target.resources(workspaceId), workspaceId).toEqual([]);
        if (unmarked) {
          expect(names(report)).not.toContain(unmarked.name);
          expect(await unmarked.exists(), unmarked.name).toBe(true);
        }
      },
    );

    reaperCase(
      'reaper.shared-sandbox',
      'two managers in two processes asking for one workspace share one sandbox, in use until the last lets go',
      async (skip) => {
        if (!target.sharedAcrossProcesses)
          return skip('the target does not say two hosts share one sandbox (target.sharedAcrossProcesses)');
        const create = { workspaceId: `${runId}-shared`, owner: ownerOf('d') };
        owners.add(create.owner);
        // Each holds its lease until its stdin ends, then closes its manager.
        const hold = `const seen = await workspace.getSandbox().exec(['hostname']);
say('sandbox ' + seen.stdoutText.trim());
await new Promise((resolve) => { process.stdin.on('data', () => {}); process.stdin.on('end', resolve); });
await manager[Symbol.asyncDispose]();`;
        const [first, second] = [1, 2].map(() => startHost(target.process, create, 'manager', hold)) as [
          HostProcess,
          HostProcess,
        ];
        hosts.push(first, second);
        const [seenByFirst, seenBySecond] = await Promise.all([
          first.said('sandbox '),
          second.said('sandbox '),
        ]);
        expect(seenByFirst).toMatch(/\S/);
        expect(seenBySecond).toBe(seenByFirst);
        expect(await target.resources(create.workspaceId)).toHaveLength(1);
        first.release();
        expect(await first.ended).toBe(0);
        // The other host still uses it.
        expect(await target.resources(create.workspaceId)).toHaveLength(1);
        const held = await target.gc({ owner: create.owner, olderThanMs: 0, dryRun: true });
        expect(reasons(held)).toEqual({ [create.workspaceId]: 'in-use' });
        second.release();
        expect(await second.ended).toBe(0);
        // Let go: no longer in use (removed with the last close, or an orphan to reap), once it
        // settled as seen from outside (a sandbox still pausing is being changed: in use).
        await target.resources(create.workspaceId);
        const released = await target.gc({ owner: create.owner, olderThanMs: 0, dryRun: true });
        expect(reasons(released)).toEqual({});
      },
    );
  });

  function reaperCase(
    id: ReaperCaseId,
    title: string,
    body: (skip: (reason: string) => never) => Promise<void>,
  ): void {
    const known = target.knownFailures?.[id];
    // Run as an expected failure: once the backend is fixed it fails, so that its entry goes.
    if (known)
      it.fails(
        `[${id}] ${title} (known failure: ${known})`,
        (test) => body((reason) => test.skip(reason)),
        timeoutMs,
      );
    else it(`[${id}] ${title}`, (test) => body((reason) => test.skip(reason)), timeoutMs);
  }
}

/** What `action` rejected with, or undefined when it resolved. */
function caught(action: Promise<unknown>): Promise<unknown> {
  return action.then(
    () => undefined,
    (error: unknown) => error,
  );
}
