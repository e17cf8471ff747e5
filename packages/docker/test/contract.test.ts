import { registerDockerConformance } from './conformance.js';

// The conformance suite on Docker, the workdir a host folder bind-mounted into the container. The
// other placements are test files of their own, so the runner runs them side by side.
await registerDockerConformance('host folder');
