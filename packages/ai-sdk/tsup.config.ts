import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: false, // declarations: one tsc program over every package (tsconfig.build.json, scripts/setup.mjs)
  sourcemap: false, // the dist is readable ES2022 as it is; maps would double the install
  clean: true,
  target: 'node20',
});
