import { registerDockerConformance } from './conformance.js';

// The conformance suite on Docker with no gateway: every command through the Engine API's exec,
// every file through the archive API (and core's POSIX fallbacks over exec), as on an image
// without node.
await registerDockerConformance('engine API only');
