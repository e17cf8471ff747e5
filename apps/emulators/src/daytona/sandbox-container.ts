import type Docker from 'dockerode';
import { agentHostConfig } from '../docker/agent-socket.js';
import { withNetwork } from '../docker/network.js';
import { labelsOf, type SandboxDescription, type SandboxSettings } from './labels.js';

export interface CreateSandboxInput {
  name: string | undefined;
  snapshot: string;
  image: string;
  user: string;
  target: string;
  cpu: number;
  memory: number;
  disk: number;
  labels: Record<string, string>;
  env: Record<string, string>;
  autoStopInterval: number;
  autoArchiveInterval: number;
  autoDeleteInterval: number;
  networkBlockAll: boolean;
  /** Recorded and reported; the emulator filters no destination. */
  networkAllowList: string;
  domainAllowList: string;
}

/** Container name of a sandbox. */
export function daytonaContainerName(sandboxId: string): string {
  return `ws-daytona-${sandboxId}`;
}

/** Creates (does not start) a sandbox's container: idle `sleep`, an init, no capabilities, the limits. */
export function createSandboxContainer(
  docker: Docker,
  input: CreateSandboxInput,
  description: SandboxDescription,
  instance: string,
  settings: SandboxSettings,
  network: boolean,
): Promise<Docker.Container> {
  return docker.createContainer(
    withNetwork(
      {
        name: daytonaContainerName(description.id),
        Image: input.image,
        // The sandbox idles until the toolbox runs something in it; an init reaps what killed commands leave.
        Entrypoint: ['sleep'],
        Cmd: ['infinity'],
        Labels: labelsOf(description, instance, settings),
        Env: Object.entries(input.env).map(([key, value]) => `${key}=${value}`),
        Tty: false,
        HostConfig: {
          ...agentHostConfig(),
          Init: true,
          // Root in the container holds no capability and cannot gain one; commands run as the user.
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          NanoCpus: Math.round(input.cpu * 1e9),
          // No swap past the memory: a command that needs more is killed by the kernel, as on Daytona.
          Memory: Math.round(input.memory * 1024 ** 3),
          MemorySwap: Math.round(input.memory * 1024 ** 3),
        },
      },
      network,
      input.networkBlockAll,
    ),
  );
}
