import { registerK8sConformance } from './conformance.js';

// Part 2 of 2 of the conformance suite on Kubernetes, with the gateway; the parts (and the exec-only
// ones) run side by side.
await registerK8sConformance('gateway', { index: 2, count: 2 });
