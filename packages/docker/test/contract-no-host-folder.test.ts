import { registerDockerConformance } from './conformance.js';

// The conformance suite on the container's own disk (no host folder): nothing outlives close().
await registerDockerConformance('no host folder');
