import { registerOpenSandboxConformance } from './conformance.js';

// Part 2 of 2 of the conformance suite on OpenSandbox; the parts run side by side.
await registerOpenSandboxConformance({ index: 2, count: 2 });
