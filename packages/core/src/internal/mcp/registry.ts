import { validateId } from '../../backend/ids.js';
import type { McpConnector, McpScopeKey, McpSession } from '../../backend/mcp-connector.js';
import { isWsError, throwIfAborted, WsError } from '../../contracts/errors.js';
import type { McpClient, McpScope, McpServerSpec } from '../../contracts/mcp.js';
import { ScopedMcpClient } from './scoped-client.js';
import {
  copySpec,
  fromStoredSpec,
  MCP_FILE_VERSION,
  type NormalizedMcpSpec,
  normalizeMcpSpec,
  toStoredSpec,
} from './spec.js';

/** Where the registry keeps `.mcp`; absent for a workspace that is not persistent. */
export interface McpStore {
  load(): Promise<string | undefined>;
  save(text: string): Promise<void>;
}

/** Options of {@link McpRegistry}. */
export interface McpRegistryOptions {
  /** The connector of the open sandbox, or undefined when this backend cannot run MCP servers now. */
  connector: () => McpConnector | undefined;
  /** Why the connector is absent, when known. */
  unavailable?: () => string | undefined;
  backend: string;
  defaults: readonly McpServerSpec[];
  /** Most live stateful connections across scopes. Default: max(40, 2 × stateful defaults). */
  maxLiveStateful?: number | undefined;
  store: () => McpStore | undefined;
}

/** A scope, checked, with its key in the registry's maps. */
export interface Scope extends McpScopeKey {
  readonly key: string;
}

/**
 * MCP declarations and live connections per (agent, session) scope. A scope that never changed its
 * declarations gets fresh copies of the defaults; one that did is persisted in `.mcp` (an explicit
 * empty list included). Stateful connections are opened lazily, capped across scopes by evicting the
 * least recently used scope other than the caller's, and reopened transparently when used again.
 */
export class McpRegistry {
  private readonly declared = new Map<string, NormalizedMcpSpec[]>();
  private readonly live = new Map<string, Map<string, McpSession>>();
  private readonly lastUsed = new Map<string, number>();
  private readonly defaults: NormalizedMcpSpec[];
  private readonly maxLiveStateful: number;
  private queue: Promise<unknown> = Promise.resolve();
  private clock = 0;
  /** Problems met when restoring `.mcp` or connecting declared servers, newest last (at most 50). */
  readonly warnings: string[] = [];

  constructor(private readonly options: McpRegistryOptions) {
    this.defaults = options.defaults.map((spec) => normalizeMcpSpec(spec));
    const statefulDefaults = this.defaults.filter((spec) => spec.stateful).length;
    this.maxLiveStateful =
      options.maxLiveStateful && options.maxLiveStateful > 0
        ? options.maxLiveStateful
        : Math.max(40, 2 * statefulDefaults);
  }

  private warn(message: string): void {
    this.warnings.push(message);
    if (this.warnings.length > 50) this.warnings.shift();
  }

  private serialize<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.catch(() => {}).then(work);
    this.queue = next;
    return next;
  }

  private scope(scope: McpScope = {}): Scope {
    const agentId =
      scope.agentId === undefined || scope.agentId === '' ? '' : validateId(scope.agentId, 'agentId');
    const sessionId =
      scope.sessionId === undefined || scope.sessionId === '' ? '' : validateId(scope.sessionId, 'sessionId');
    return { agentId, sessionId, key: `${agentId}\u0000${sessionId}` };
  }

  private declaredSpecs(scope: Scope): NormalizedMcpSpec[] {
    return this.declared.get(scope.key) ?? this.defaults.map((spec) => copySpec(spec));
  }

  private connector(): McpConnector {
    const connector = this.options.connector();
    if (!connector) {
      const why = this.options.unavailable?.();
      throw new WsError(
        'CAPABILITY_UNSUPPORTED',
        `The ${this.options.backend} workspace cannot run MCP servers${why ? `: ${why}` : ''}`,
        {
          details: { backend: this.options.backend, ...(why ? { reason: why } : {}) },
        },
      );
    }
    return connector;
  }

  /** Reads `.mcp`; a missing, corrupt or partly invalid file never fails (bad entries are skipped). */
  async restore(): Promise<void> {
    const store = this.options.store();
    this.declared.clear();
    if (!store) return;
    let text: string | undefined;
    try {
      text = await store.load();
    } catch (error) {
      this.warn(`.mcp could not be read: ${(error as Error).message}`);
      return;
    }
    if (text === undefined) return;
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      this.warn('.mcp is not valid JSON; every scope uses the defaults');
      return;
    }
    const load = (agentId: string, sessionId: string, entries: unknown) => {
      if (!Array.isArray(entries)) return;
      const specs: NormalizedMcpSpec[] = [];
      for (const entry of entries) {
        try {
          const spec = fromStoredSpec(entry);
          if (!specs.some((existing) => existing.name === spec.name)) specs.push(spec);
        } catch (error) {
          this.warn(
            `.mcp entry skipped for agent ${JSON.stringify(agentId)} session ${JSON.stringify(sessionId)}: ${(error as Error).message}`,
          );
        }
      }
      try {
        this.declared.set(this.scope({ agentId, sessionId }).key, specs);
      } catch (error) {
        this.warn(`.mcp scope skipped: ${(error as Error).message}`);
      }
    };
    if (Array.isArray(data)) {
      load('', '', data);
      return;
    }
    const mcps = (data as { mcps?: unknown })?.mcps;
    if (typeof mcps !== 'object' || mcps === null) return;
    for (const [agentId, sessions] of Object.entries(mcps)) {
      if (typeof sessions !== 'object' || sessions === null) continue;
      for (const [sessionId, entries] of Object.entries(sessions)) load(agentId, sessionId, entries);
    }
  }

  private async save(): Promise<void> {
    const store = this.options.store();
    if (!store) return;
    const mcps: Record<string, Record<string, unknown[]>> = {};
    for (const [key, specs] of this.declared) {
      const [agentId = '', sessionId = ''] = key.split('\u0000');
      mcps[agentId] ??= {};
      mcps[agentId][sessionId] = specs.map(toStoredSpec);
    }
    await store.save(JSON.stringify({ version: MCP_FILE_VERSION, mcps }, null, 2));
  }

  /** The live clients of a scope, in declaration order; declared servers that fail to connect are left out. */
  list(scopeInput: McpScope = {}, options: { signal?: AbortSignal } = {}): Promise<McpClient[]> {
    const scope = this.scope(scopeInput);
    return this.serialize(async () => {
      const specs = this.declaredSpecs(scope);
      this.lastUsed.set(scope.key, ++this.clock);
      if (specs.length === 0) return [];
      const connector = this.connector();
      const live = this.liveOf(scope);
      const clients: McpClient[] = [];
      for (const spec of specs) {
        throwIfAborted(options.signal);
        if (spec.stateful && !live.has(spec.name)) {
          try {
            await this.makeRoom(scope);
            live.set(spec.name, await connector.connect(spec, scope, options));
          } catch (error) {
            if (isWsError(error, 'ABORTED')) throw error;
            this.warn(
              `MCP server ${spec.name} (agent ${JSON.stringify(scope.agentId)}, session ${JSON.stringify(scope.sessionId)}) is unavailable: ${(error as Error).message}`,
            );
            continue;
          }
        }
        clients.push(new ScopedMcpClient(this, scope, spec));
      }
      return clients;
    });
  }

  /** Declares and connects a server in one scope. @throws WsError `CONFLICT` for a name already declared there. */
  add(
    input: McpServerSpec,
    scopeInput: McpScope = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const spec = normalizeMcpSpec(copySpec(input));
    const scope = this.scope(scopeInput);
    return this.serialize(async () => {
      const specs = this.declaredSpecs(scope);
      if (specs.some((existing) => existing.name === spec.name)) {
        throw new WsError(
          'CONFLICT',
          `MCP server ${JSON.stringify(spec.name)} already exists for agent ${JSON.stringify(scope.agentId)} session ${JSON.stringify(scope.sessionId)}`,
        );
      }
      const connector = this.connector();
      if (spec.stateful) await this.makeRoom(scope);
      const session = await connector.connect(spec, scope, options);
      if (spec.stateful) this.liveOf(scope).set(spec.name, session);
      else await session.close();
      this.declared.set(scope.key, [...specs, spec]);
      this.lastUsed.set(scope.key, ++this.clock);
      await this.save();
    });
  }

  /** Removes a server from one scope and closes its connection; an unknown name is a no-op. */
  remove(name: string, scopeInput: McpScope = {}): Promise<void> {
    const scope = this.scope(scopeInput);
    return this.serialize(async () => {
      const specs = this.declaredSpecs(scope);
      if (!specs.some((spec) => spec.name === name)) return;
      const session = this.live.get(scope.key)?.get(name);
      this.live.get(scope.key)?.delete(name);
      await session?.close().catch(() => {});
      this.declared.set(
        scope.key,
        specs.filter((spec) => spec.name !== name),
      );
      await this.save();
    });
  }

  /** Forgets a scope: closes its connections and drops its declarations (the defaults apply again). */
  purge(scopeInput: McpScope): Promise<void> {
    const scope = this.scope(scopeInput);
    return this.serialize(async () => {
      await this.closeScope(scope.key);
      this.lastUsed.delete(scope.key);
      if (this.declared.delete(scope.key)) await this.save();
    });
  }

  /** Closes every connection; declarations stay. */
  closeAll(): Promise<void> {
    return this.serialize(async () => {
      await Promise.all([...this.live.keys()].map((key) => this.closeScope(key)));
      this.lastUsed.clear();
    });
  }

  /** Closes every connection and forgets every declaration. */
  async clear(): Promise<void> {
    await this.closeAll();
    await this.serialize(async () => this.declared.clear());
  }

  private liveOf(scope: Scope): Map<string, McpSession> {
    let live = this.live.get(scope.key);
    if (!live) {
      live = new Map();
      this.live.set(scope.key, live);
    }
    return live;
  }

  private async closeScope(key: string): Promise<void> {
    const sessions = this.live.get(key);
    this.live.delete(key);
    await Promise.all([...(sessions?.values() ?? [])].map((session) => session.close().catch(() => {})));
  }

  /** Closes the oldest other scope's first connection while the cap is reached; never the caller's. */
  private async makeRoom(caller: Scope): Promise<void> {
    for (;;) {
      let count = 0;
      for (const sessions of this.live.values()) count += sessions.size;
      if (count < this.maxLiveStateful) return;
      let victim: string | undefined;
      for (const [key, sessions] of this.live) {
        if (key === caller.key || sessions.size === 0) continue;
        if (victim === undefined || (this.lastUsed.get(key) ?? 0) < (this.lastUsed.get(victim) ?? 0))
          victim = key;
      }
      if (victim === undefined) return;
      const sessions = this.live.get(victim)!;
      const [name, session] = sessions.entries().next().value as [string, McpSession];
      sessions.delete(name);
      await session.close().catch(() => {});
    }
  }

  /**
   * Runs `work` with a connection for `spec` in `scope`: the live one, a reopened one after an
   * eviction, or (for a stateless server) one opened for this call only.
   */
  async withSession<T>(
    scope: Scope,
    spec: NormalizedMcpSpec,
    work: (session: McpSession) => Promise<T>,
    signal?: AbortSignal,
    idempotent = false,
  ): Promise<T> {
    try {
      return await this.withSessionOnce(scope, spec, work, signal);
    } catch (error) {
      // A connection found dead before the request was sent (or a request that changes nothing) is
      // made once more on a new connection; one that may have run is never sent again.
      const unsent = isWsError(error, 'BACKEND_UNAVAILABLE') && error.details?.mayHaveRun === false;
      if (!(unsent || (idempotent && isWsError(error, 'BACKEND_UNAVAILABLE'))) || signal?.aborted)
        throw error;
      return this.withSessionOnce(scope, spec, work, signal);
    }
  }

  private async withSessionOnce<T>(
    scope: Scope,
    spec: NormalizedMcpSpec,
    work: (session: McpSession) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    if (!spec.stateful) {
      const session = await this.connector().connect(spec, scope, signal ? { signal } : {});
      try {
        return await work(session);
      } finally {
        await session.close().catch(() => {});
      }
    }
    const session = await this.serialize(async () => {
      const declared = this.declaredSpecs(scope).some((candidate) => candidate.name === spec.name);
      if (!declared)
        throw new WsError('NOT_FOUND', `MCP server ${JSON.stringify(spec.name)} was removed from this scope`);
      this.lastUsed.set(scope.key, ++this.clock);
      const live = this.liveOf(scope);
      let current = live.get(spec.name);
      if (!current) {
        await this.makeRoom(scope);
        current = await this.connector().connect(spec, scope, signal ? { signal } : {});
        live.set(spec.name, current);
      }
      return current;
    });
    try {
      return await work(session);
    } catch (error) {
      // A connection lost with its server (or the gateway holding it) is dropped and reopened on the next use.
      if (isWsError(error, 'BACKEND_UNAVAILABLE')) {
        await this.serialize(async () => {
          const live = this.live.get(scope.key);
          if (live?.get(spec.name) === session) live.delete(spec.name);
        });
        await session.close().catch(() => {});
      }
      throw error;
    }
  }
}
