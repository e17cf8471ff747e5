import { copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { defineConfig } from 'tsup';

const require = createRequire(import.meta.url);

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: false, // declarations: one tsc program over every package (tsconfig.build.json, scripts/setup.mjs)
  sourcemap: false, // the dist is readable ES2022 as it is; maps would double the install
  clean: true,
  target: 'node20',
  // The gateway bundle ships inside this package as an asset (dist/gateway.mjs).
  onSuccess: async () => {
    copyFileSync(require.resolve('@ws/gateway/gateway.mjs'), 'dist/gateway.mjs');
  },
});
