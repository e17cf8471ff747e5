import { defineConfig } from 'tsup';

// One self-contained file: @ws/core, @ws/local and the MCP SDK bundled in, no runtime dependencies,
// runnable by the node of a sandbox (18 or newer).
export default defineConfig({
  entry: { gateway: 'src/main.ts' },
  format: ['esm'],
  outExtension: () => ({ js: '.mjs' }),
  platform: 'node',
  target: 'node18',
  noExternal: [/.*/],
  splitting: false,
  sourcemap: false,
  minify: true,
  clean: true,
  banner: {
    js: "import { createRequire as __wsCreateRequire } from 'node:module'; const require = __wsCreateRequire(import.meta.url);",
  },
});
