import { registerOpenSandboxConformance } from './conformance.js';

// Part 1 of 2 of the conformance suite on OpenSandbox; the parts run side by side.
await registerOpenSandboxConformance({ index: 1, count: 2 });
