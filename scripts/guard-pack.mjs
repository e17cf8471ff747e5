// Runs before a package is packed (its `prepack` script). `npm pack` and `npm publish` copy the
// manifest as it is, so a `workspace:` range would reach the registry and no one could install the
// package; pnpm replaces those ranges with real versions. Stop npm, let pnpm through.
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
const agent = process.env.npm_config_user_agent ?? '';
const ranges = ['dependencies', 'peerDependencies', 'optionalDependencies', 'devDependencies'].flatMap(
  (field) =>
    Object.entries(manifest[field] ?? {})
      .filter(([, range]) => String(range).startsWith('workspace:'))
      .map(([name, range]) => `${name}@${range}`),
);
if (ranges.length > 0 && !agent.startsWith('pnpm/')) {
  console.error(
    `${manifest.name}: its manifest has ${ranges.join(', ')}, which only pnpm rewrites when packing.\n` +
      'Pack or publish it with pnpm (`npx pnpm@12.4.2 pack`, `npm run release`), not npm.',
  );
  process.exit(1);
}
