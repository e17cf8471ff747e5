// The Pod of a workspace as the API takes it: one container over the workspace's volume.
import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import { layoutPaths, shellQuote } from '@ws/core/backend';
import type { PodSettings } from './k8s-objects.js';
import { POD_WORKDIR } from './k8s-sandbox.js';
import { podSecurityContextOf, securityContextOf } from './pod-policy.js';

/** The container of a workspace's Pod. */
export const CONTAINER_NAME = 'workspace';
const VOLUME_NAME = 'workspace';

/** PID 1 of the Pod: lays the workdir out, then waits, exiting at once on SIGTERM. */
function podCommand(): string[] {
  const { dataDir, skillsDir, skillSeedDir, sessionsDir } = layoutPaths(POD_WORKDIR);
  const [data, sessions, skills, seed] = [dataDir, sessionsDir, skillsDir, skillSeedDir].map((path) =>
    shellQuote(path),
  );
  return [
    'sh',
    '-c',
    [
      `mkdir -p ${data} ${sessions} 2>/dev/null`,
      `if [ ! -d ${skills} ] || [ -d ${seed} ]; then mkdir -p ${seed} 2>/dev/null; fi`,
      'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done',
    ].join('\n'),
  ];
}

/** The Pod `metadata` names, running the workspace's container over the PVC `claimName`. */
export function podManifest(metadata: V1ObjectMeta, claimName: string, settings: PodSettings): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: {
      restartPolicy: 'OnFailure',
      terminationGracePeriodSeconds: 5,
      // The agent runs in this Pod: no API token in it unless a service account is asked for.
      automountServiceAccountToken: settings.serviceAccount !== undefined,
      ...podSecurityContextOf(settings.user),
      ...(settings.serviceAccount ? { serviceAccountName: settings.serviceAccount } : {}),
      ...(settings.nodeSelector ? { nodeSelector: { ...settings.nodeSelector } } : {}),
      ...(settings.tolerations ? { tolerations: [...settings.tolerations] } : {}),
      ...(settings.imagePullSecrets
        ? { imagePullSecrets: settings.imagePullSecrets.map((name) => ({ name })) }
        : {}),
      containers: [
        {
          name: CONTAINER_NAME,
          image: settings.image,
          ...(settings.imagePullPolicy ? { imagePullPolicy: settings.imagePullPolicy } : {}),
          command: podCommand(),
          workingDir: POD_WORKDIR,
          env: Object.entries(settings.env ?? {}).map(([name, value]) => ({ name, value })),
          ...(settings.resources ? { resources: settings.resources } : {}),
          volumeMounts: [{ name: VOLUME_NAME, mountPath: POD_WORKDIR }],
          ...securityContextOf(settings.privileges ?? 'hardened', settings.user),
        },
      ],
      volumes: [{ name: VOLUME_NAME, persistentVolumeClaim: { claimName } }],
    },
  };
}
