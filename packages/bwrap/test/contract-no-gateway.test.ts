import { registerBubblewrapConformance } from './conformance.js';

// The conformance suite on bubblewrap with no gateway (as in a sandbox without node): files through
// commands, no MCP.
await registerBubblewrapConformance('no gateway');
