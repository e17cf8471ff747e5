import type Docker from 'dockerode';
import { agentHostConfig } from '../docker/agent-socket.js';
import { withNetwork } from '../docker/network.js';
import { tarEntries } from '../docker/tar-entries.js';
import { isRecord } from '../http/http-util.js';
import { invalid } from './status.js';

/** Node name every emulated pod is scheduled on. */
export const NODE_NAME = 'ws-emulator';

const MEMORY_UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** A CPU quantity (`500m`, `1`, `1.5`) in nano-CPUs, or undefined when it is not one. */
export function parseCpu(quantity: unknown): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(m?)$/.exec(String(quantity ?? ''));
  if (!match) return undefined;
  const cores = Number(match[1]) / (match[2] === 'm' ? 1000 : 1);
  return Math.round(cores * 1e9);
}

/** A memory quantity (`512Mi`, `1Gi`, `1G`, `1000`) in bytes, or undefined when it is not one. */
export function parseMemory(quantity: unknown): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(|k|M|G|T|Ki|Mi|Gi|Ti)$/.exec(String(quantity ?? ''));
  if (!match) return undefined;
  return Math.round(Number(match[1]) * MEMORY_UNITS[match[2]!]!);
}

export interface PodMount {
  claim?: string;
  mountPath: string;
  readOnly: boolean;
}

/** The first container of a pod spec, after checking the fields the emulator acts on (throws 422). */
export function checkPodSpec(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  const fail = (field: string, problem: string) => invalid('Pod', name, field, problem);
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) throw fail('spec.containers', 'Required value');
  if (containers.length > 1)
    throw fail('spec.containers', 'Too many: the emulator runs one container per pod (a Docker container)');
  const container = containers[0] as unknown;
  if (!isRecord(container)) throw fail('spec.containers[0]', 'Required value');
  if (typeof container.name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(container.name))
    throw fail('spec.containers[0].name', `Invalid value: ${JSON.stringify(container.name)}`);
  if (typeof container.image !== 'string' || container.image === '')
    throw fail('spec.containers[0].image', 'Required value');
  for (const field of ['command', 'args'] as const) {
    const value = container[field];
    if (value !== undefined && !(Array.isArray(value) && value.every((entry) => typeof entry === 'string')))
      throw fail(`spec.containers[0].${field}`, 'must be a list of strings');
  }
  for (const entry of (container.env as unknown[] | undefined) ?? []) {
    if (!isRecord(entry) || typeof entry.name !== 'string' || entry.name === '')
      throw fail('spec.containers[0].env', 'every entry needs a name');
    if (entry.valueFrom !== undefined)
      throw fail('spec.containers[0].env', 'valueFrom is not supported by the emulator');
  }
  for (const context of [spec.securityContext, container.securityContext]) {
    if (!isRecord(context)) continue;
    if (context.privileged === true)
      throw fail('securityContext.privileged', 'Forbidden: the emulator runs containers unprivileged');
  }
  const own = isRecord(container.securityContext) ? container.securityContext : {};
  if (own.capabilities !== undefined) {
    const capabilities = isRecord(own.capabilities) ? own.capabilities : {};
    for (const field of ['add', 'drop'] as const) {
      const list = capabilities[field];
      if (
        list !== undefined &&
        !(Array.isArray(list) && list.every((item) => /^[A-Z_]+$/.test(String(item))))
      )
        throw fail(
          `spec.containers[0].securityContext.capabilities.${field}`,
          'must be a list of capability names (ALL, NET_ADMIN, …)',
        );
    }
  }
  const limits =
    isRecord(container.resources) && isRecord(container.resources.limits) ? container.resources.limits : {};
  if (limits.cpu !== undefined && parseCpu(limits.cpu) === undefined)
    throw fail('spec.containers[0].resources.limits[cpu]', `Invalid value: ${JSON.stringify(limits.cpu)}`);
  if (limits.memory !== undefined && parseMemory(limits.memory) === undefined)
    throw fail(
      'spec.containers[0].resources.limits[memory]',
      `Invalid value: ${JSON.stringify(limits.memory)}`,
    );
  podMounts(name, spec, container);
  return container;
}

/** The volume mounts of a pod's container, each resolved to its claim (emptyDir: no claim). */
export function podMounts(
  name: string,
  spec: Record<string, unknown>,
  container: Record<string, unknown>,
): PodMount[] {
  const volumes = new Map<string, Record<string, unknown>>();
  for (const volume of (spec.volumes as unknown[] | undefined) ?? []) {
    if (!isRecord(volume) || typeof volume.name !== 'string')
      throw invalid('Pod', name, 'spec.volumes', 'every volume needs a name');
    volumes.set(volume.name, volume);
  }
  return ((container.volumeMounts as unknown[] | undefined) ?? []).map((mount, index) => {
    const field = `spec.containers[0].volumeMounts[${index}]`;
    if (!isRecord(mount) || typeof mount.name !== 'string' || typeof mount.mountPath !== 'string')
      throw invalid('Pod', name, field, 'name and mountPath are required');
    const volume = volumes.get(mount.name);
    if (!volume) throw invalid('Pod', name, `${field}.name`, `Not found: ${JSON.stringify(mount.name)}`);
    const readOnly = mount.readOnly === true;
    if (isRecord(volume.persistentVolumeClaim) && typeof volume.persistentVolumeClaim.claimName === 'string')
      return { claim: volume.persistentVolumeClaim.claimName, mountPath: mount.mountPath, readOnly };
    if (isRecord(volume.emptyDir)) return { mountPath: mount.mountPath, readOnly };
    throw invalid(
      'Pod',
      name,
      `spec.volumes[${mount.name}]`,
      'Unsupported: the emulator mounts persistentVolumeClaim and emptyDir volumes only',
    );
  });
}

/** Names of the PVCs a pod mounts. */
export function claimsOf(spec: Record<string, unknown>): string[] {
  return ((spec.volumes as unknown[] | undefined) ?? []).flatMap((volume) =>
    isRecord(volume) &&
    isRecord(volume.persistentVolumeClaim) &&
    typeof volume.persistentVolumeClaim.claimName === 'string'
      ? [volume.persistentVolumeClaim.claimName]
      : [],
  );
}

function userOf(spec: Record<string, unknown>, container: Record<string, unknown>): string | undefined {
  const pod = isRecord(spec.securityContext) ? spec.securityContext : {};
  const own = isRecord(container.securityContext) ? container.securityContext : {};
  const user = own.runAsUser ?? pod.runAsUser;
  const group = own.runAsGroup ?? pod.runAsGroup;
  if (typeof user !== 'number') return typeof group === 'number' ? `0:${group}` : undefined;
  return typeof group === 'number' ? `${user}:${group}` : String(user);
}

const RESTART_POLICIES: Record<string, string> = { Always: 'always', OnFailure: 'on-failure', Never: 'no' };

/** Docker create options of a pod's container (not started): its capabilities, limits, mounts and network. */
export function containerOptions(input: {
  name: string;
  hostname: string;
  image: string;
  spec: Record<string, unknown>;
  container: Record<string, unknown>;
  volumes: ReadonlyMap<string, string>;
  labels: Record<string, string>;
  /** false: no network at all, only loopback (see `K8sEmulatorOptions.network`). */
  network?: boolean;
  /** A NetworkPolicy denies the pod all egress: no network but loopback. */
  offline?: boolean;
}): Docker.ContainerCreateOptions {
  const { spec, container } = input;
  const limits =
    isRecord(container.resources) && isRecord(container.resources.limits) ? container.resources.limits : {};
  const env = ((container.env as Record<string, unknown>[] | undefined) ?? []).map(
    (entry) => `${entry.name}=${typeof entry.value === 'string' ? entry.value : ''}`,
  );
  const user = userOf(spec, container);
  const podContext = isRecord(spec.securityContext) ? spec.securityContext : {};
  const mounts = podMounts(input.hostname, spec, container).map((mount) =>
    mount.claim !== undefined
      ? {
          Type: 'volume' as const,
          Source: input.volumes.get(mount.claim)!,
          Target: mount.mountPath,
          ReadOnly: mount.readOnly,
        }
      : { Type: 'volume' as const, Source: '', Target: mount.mountPath, ReadOnly: mount.readOnly },
  );
  const cpu = parseCpu(limits.cpu);
  const memory = parseMemory(limits.memory);
  const security = isRecord(container.securityContext) ? container.securityContext : {};
  const capabilities = isRecord(security.capabilities) ? security.capabilities : {};
  const names = (list: unknown) => (Array.isArray(list) ? list.map(String) : []);
  return withNetwork(
    {
      name: input.name,
      Image: input.image,
      ...(Array.isArray(container.command) ? { Entrypoint: container.command as string[] } : {}),
      ...(Array.isArray(container.args) ? { Cmd: container.args as string[] } : {}),
      // A pod that gives a command but no args runs it without the image's CMD, as the kubelet does.
      ...(Array.isArray(container.command) && !Array.isArray(container.args) ? { Cmd: [] } : {}),
      Env: env,
      ...(typeof container.workingDir === 'string' ? { WorkingDir: container.workingDir } : {}),
      ...(user !== undefined ? { User: user } : {}),
      Hostname: input.hostname.slice(0, 63),
      Labels: input.labels,
      Tty: false,
      HostConfig: {
        ...agentHostConfig(),
        Init: true,
        // The container's capabilities and escalation as a kubelet sets them; none given: the runtime's.
        ...(names(capabilities.drop).length > 0 ? { CapDrop: names(capabilities.drop) } : {}),
        ...(names(capabilities.add).length > 0 ? { CapAdd: names(capabilities.add) } : {}),
        ...(security.allowPrivilegeEscalation === false ? { SecurityOpt: ['no-new-privileges'] } : {}),
        Mounts: mounts,
        RestartPolicy: { Name: RESTART_POLICIES[String(spec.restartPolicy ?? 'Always')] ?? 'always' },
        ...(cpu !== undefined ? { NanoCpus: cpu } : {}),
        // No swap past the limit: what outgrows it is killed inside the container, as on a node.
        ...(memory !== undefined ? { Memory: memory, MemorySwap: memory } : {}),
        ...(typeof podContext.fsGroup === 'number' ? { GroupAdd: [String(podContext.fsGroup)] } : {}),
      },
    },
    input.network ?? true,
    input.offline ?? false,
  );
}

/**
 * What the kubelet does with a Pod's `fsGroup` before the container starts: each writable volume's
 * root goes to that group, group-writable and setgid (so what is made in it keeps the group). Done
 * through the archive API, which the engine applies as root. (The kubelet also changes what the
 * volume already holds; the emulator gives the root only.)
 */
export async function giveVolumesToFsGroup(
  created: Docker.Container,
  spec: Record<string, unknown>,
  container: Record<string, unknown>,
): Promise<void> {
  const context = isRecord(spec.securityContext) ? spec.securityContext : {};
  const group = context.fsGroup;
  if (typeof group !== 'number') return;
  for (const mount of podMounts('', spec, container)) {
    if (mount.readOnly) continue;
    const name = mount.mountPath.replace(/^\/+/, '');
    if (name === '') continue;
    await created.putArchive(tarEntries([{ name, type: 'directory', mode: 0o2775, uid: 0, gid: group }]), {
      path: '/',
    });
  }
}
