import { registerDaytonaConformance } from './conformance.js';

// Part 3 of 3 of the conformance suite on Daytona; the parts run side by side.
await registerDaytonaConformance({ index: 3, count: 3 });
