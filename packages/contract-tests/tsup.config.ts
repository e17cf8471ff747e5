import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: false, // declarations: one tsc program over every package (tsconfig.build.json, scripts/setup.mjs)
    sourcemap: false, // the dist is readable ES2022 as it is; maps would double the install
    clean: false,
    target: 'node20',
    external: ['vitest'],
  },
  {
    // A published MCP server as one self-contained file, so it can run inside any sandbox with node.
    entry: { 'fixtures/memory-server': 'fixtures/memory-server.ts' },
    format: ['esm'],
    outExtension: () => ({ js: '.mjs' }),
    platform: 'node',
    target: 'node18',
    noExternal: [/.*/],
    splitting: false,
    sourcemap: false,
    clean: false,
    banner: {
      js: "import { createRequire as __wsCreateRequire } from 'node:module'; const require = __wsCreateRequire(import.meta.url);",
    },
  },
]);
