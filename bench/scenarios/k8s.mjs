import { Writable } from 'node:stream';
import { CoreV1Api, Exec, KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_DOCKER_IMAGE, dockerProblem } from '@ws/docker';
import { removeK8sEmulatorObjects, startK8sEmulator } from '@ws/emulators';
import { K8sWorkspace } from '@ws/k8s';
import { bashTrue, interleave, interleaveWithTeardown, median, metricRow, ratioRow } from '../harness.mjs';

export const name = 'k8s';

/** Runs `true` in the Pod through client-node's Exec alone, as a caller without @ws would. */
function rawExec(exec, namespace, pod) {
  return new Promise((resolve, reject) => {
    const sink = () =>
      new Writable({
        write(_chunk, _encoding, callback) {
          callback();
        },
      });
    exec
      .exec(namespace, pod, 'workspace', ['true'], sink(), sink(), null, false, (status) => {
        if (status.status === 'Success') resolve();
        else reject(new Error(JSON.stringify(status)));
      })
      .catch(reject);
  });
}

/** A Pod as a caller without @ws makes it: created, waited for until it runs. */
async function rawPod(core, image, name, owner) {
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name, labels: { 'ws.owner': owner } },
      spec: {
        containers: [
          { name: 'workspace', image, command: ['sh', '-c', 'trap "exit 0" TERM; sleep infinity & wait'] },
        ],
        restartPolicy: 'Never',
      },
    },
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const pod = await core.readNamespacedPod({ namespace: 'default', name });
    if (pod.status?.phase === 'Running') return;
    if (Date.now() > deadline) throw new Error(`Pod ${name} did not run within 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Bash through the gateway against a raw client-node `Exec` of `true`, both on the Kubernetes
 * emulator (Pods as local containers), in one run; and the time to open a workspace (new Pod and
 * PVC) and to re-attach to its running Pod.
 */
export async function run({ iterations }) {
  const image = process.env.WS_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE;
  const problem = await dockerProblem(image);
  if (problem) return { skipped: `the Kubernetes emulator needs Docker: ${problem}` };
  const instance = `ws-bench-k8s-${process.pid}`;
  const emulator = await startK8sEmulator({ instance });
  const config = new KubeConfig();
  config.loadFromString(emulator.kubeconfig);
  const options = { kubeconfig: config, namespace: 'default', image, owner: 'ws-bench-k8s' };
  const rows = [];
  const workspaces = [];
  try {
    const opened = [];
    let workspace;
    for (let round = 0; round < 3; round++) {
      const started = performance.now();
      workspace = new K8sWorkspace({ ...options, workspaceId: `bench-${round}-${Date.now().toString(36)}` });
      workspaces.push(workspace);
      await workspace.initialize();
      opened.push(performance.now() - started);
      if (round < 2) await workspace.destroy();
    }
    const core = config.makeApiClient(CoreV1Api);
    const exec = new Exec(config);
    let sequence = 0;
    const first = await interleaveWithTeardown({
      subject: async () => {
        const fresh = new K8sWorkspace({
          ...options,
          workspaceId: `bench-first-${sequence++}-${Date.now().toString(36)}`,
        });
        workspaces.push(fresh);
        await fresh.initialize();
        await bashTrue(fresh);
        return () => fresh.destroy();
      },
      floor: async () => {
        const name = `raw-${sequence++}-${Date.now().toString(36)}`;
        await rawPod(core, image, name, options.owner);
        await rawExec(exec, 'default', name);
        return () => core.deleteNamespacedPod({ namespace: 'default', name, gracePeriodSeconds: 0 });
      },
      iterations: Math.max(2, Math.min(5, Math.round(iterations / 80))),
    });
    rows.push(
      ratioRow({
        scenario: 'Kubernetes open + first command (emulator)',
        subject: "new workspace: initialize() (Pod, claim, policy), Bash 'true'",
        floor: "client-node: create a Pod, wait until it runs, Exec 'true'",
        samples: first,
        target: 1.3,
      }),
    );
    const attachStarted = performance.now();
    const again = new K8sWorkspace({ ...options, workspaceId: workspace.id });
    workspaces.push(again);
    await again.initialize();
    const attached = performance.now() - attachStarted;
    await again.close().catch(() => {});
    const bash = (await workspace.listTools()).find((tool) => tool.name === 'Bash');
    const samples = await interleave({
      subject: async () => {
        const result = await bash.call({ command: 'true' });
        if (result.isError) throw new Error(JSON.stringify(result.content));
      },
      floor: () => rawExec(exec, 'default', workspace.podName),
      iterations: Math.max(30, Math.round(iterations / 4)),
      warmup: 5,
    });
    rows.push(
      ratioRow({
        scenario: 'Kubernetes Bash round trip (emulator)',
        subject: "Bash 'true' (gateway over one exec's stdio)",
        floor: "raw client-node Exec of 'true'",
        samples,
        target: 1.2,
      }),
      metricRow({
        scenario: 'Kubernetes open (emulator, new Pod and PVC)',
        subject: 'median initialize(), gateway included',
        value: median(opened),
        unit: 'ms',
      }),
      metricRow({
        scenario: 'Kubernetes re-attach (emulator, running Pod)',
        subject: 'initialize() of a second object on the id',
        value: attached,
        unit: 'ms',
      }),
    );
    return rows;
  } finally {
    for (const workspace of workspaces) await workspace.destroy().catch(() => {});
    await emulator.close();
    await removeK8sEmulatorObjects(undefined, { instance }).catch(() => {});
  }
}
