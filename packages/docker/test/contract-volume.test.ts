import { registerDockerConformance } from './conformance.js';

// The conformance suite on a named volume, which persists like a host folder and goes with destroy().
await registerDockerConformance('named volume');
