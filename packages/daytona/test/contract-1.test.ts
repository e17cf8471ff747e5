import { registerDaytonaConformance } from './conformance.js';

// Part 1 of 3 of the conformance suite on Daytona; the parts run side by side.
await registerDaytonaConformance({ index: 1, count: 3 });
