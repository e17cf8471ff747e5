import { registerK8sConformance } from './conformance.js';

// Part 1 of 2 of the conformance suite on Kubernetes, with the gateway; the parts (and the exec-only
// ones) run side by side.
await registerK8sConformance('gateway', { index: 1, count: 2 });
