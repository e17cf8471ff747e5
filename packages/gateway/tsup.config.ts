import { build, type Plugin } from 'esbuild';
import { defineConfig } from 'tsup';

// What both parts of the gateway are built with: self-contained ESM for the node of a sandbox (18 or
// newer), node's own modules the only imports.
const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node18',
  minify: true,
} as const;

// The MCP client is most of the gateway's code and is needed only once an MCP server is added. It is
// bundled on its own and embedded in the gateway as text, compiled from a data: URL on first use: a
// gateway start parses a few dozen kilobytes instead of hundreds. Its `require` (for the CommonJS
// parts of its dependencies) resolves node's own modules only, so the path it is made from is moot.
const embedMcp: Plugin = {
  name: 'ws-embed-mcp',
  setup(esbuild) {
    esbuild.onLoad({ filter: /[\\/]load-mcp\.ts$/ }, async () => {
      const result = await build({
        ...common,
        stdin: {
          contents: "export { HostMcpConnector } from '@ws/local/mcp';",
          resolveDir: import.meta.dirname,
          loader: 'ts',
        },
        write: false,
        banner: {
          js: "import { createRequire as __wsCreateRequire } from 'node:module'; const require = __wsCreateRequire('/ws-gateway-mcp.mjs');",
        },
      });
      const source = result.outputFiles[0]?.text ?? '';
      return {
        loader: 'js',
        contents: [
          `const source = ${JSON.stringify(source)};`,
          'export function loadMcp() {',
          "  return import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'));",
          '}',
        ].join('\n'),
      };
    });
  },
};

// One self-contained file: @ws/core, @ws/local and the MCP SDK bundled in, no runtime dependencies.
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
  esbuildPlugins: [embedMcp],
  banner: {
    js: "import { createRequire as __wsCreateRequire } from 'node:module'; const require = __wsCreateRequire(import.meta.url);",
  },
});
