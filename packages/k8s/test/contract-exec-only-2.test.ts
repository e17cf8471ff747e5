import { registerK8sConformance } from './conformance.js';

// Part 2 of 2 of the conformance suite on Kubernetes with no gateway: every command, file and process
// over its own exec WebSocket (and core's POSIX fallbacks over exec), as on an image without node.
await registerK8sConformance('exec only', { index: 2, count: 2 });
