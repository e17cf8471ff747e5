import { registerDaytonaConformance } from './conformance.js';

// Part 2 of 3 of the conformance suite on Daytona; the parts run side by side.
await registerDaytonaConformance({ index: 2, count: 3 });
