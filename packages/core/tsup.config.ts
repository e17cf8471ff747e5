import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/backend.ts', 'src/gateway.ts'],
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
