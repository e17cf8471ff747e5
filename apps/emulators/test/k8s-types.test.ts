import type { V1Pod, V1PodCondition, V1Status } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Wire } from '../src/k8s/wire.js';

// The emulator types every body it sends as `Wire<V1…>` of @kubernetes/client-node's own models; this
// file proves that such a type refuses a body missing a field the model requires (the typecheck
// fails if the `@ts-expect-error` below stops being needed).
describe('k8s response types', () => {
  it('are the client models with their required fields', () => {
    // @ts-expect-error a PodCondition needs `status` (and `type`)
    const condition: Wire<V1PodCondition> = { type: 'Ready', lastTransitionTime: '2026-12-03T00:00:00Z' };
    const status = { metadata: {}, status: 'Success' } satisfies Wire<V1Status>;
    const pod: Wire<V1Pod> = {
      metadata: { creationTimestamp: '2026-12-03T00:00:00Z' },
      status: { phase: 'Running' },
    };
    expect([condition.type, status.status, pod.status?.phase]).toEqual(['Ready', 'Success', 'Running']);
  });
});
