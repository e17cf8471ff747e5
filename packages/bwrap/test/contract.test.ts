import { registerBubblewrapConformance } from './conformance.js';

// The conformance suite on bubblewrap, the workdir a host folder. The other set-ups are test files
// of their own, so the runner runs them side by side.
await registerBubblewrapConformance('host folder');
