import { registerE2BConformance } from './conformance.js';

// Part 1 of 2 of the conformance suite on E2B; the parts run side by side.
await registerE2BConformance({ index: 1, count: 2 });
