import { registerBubblewrapConformance } from './conformance.js';

// The conformance suite on bubblewrap with a temporary workdir (no hostWorkdir): nothing outlives close().
await registerBubblewrapConformance('temporary workdir');
