/** The skill the tour installs: a folder holding a SKILL.md with front matter. */
export const DEMO_SKILL = {
  dir: 'release-notes',
  name: 'release-notes',
  markdown: `---
name: release-notes
description: How to write the release notes of this project.
---
# Release notes

1. List the changes since the last tag: \`git log --oneline <tag>..HEAD\`.
2. Group them under Added, Changed and Fixed; one line each, user-facing words.
3. Save them as notes/RELEASE.md and ask for a review.
`,
};

/** A 1×1 PNG, the image the tour offloads with its context. */
export const DEMO_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/**
 * A tiny MCP server over stdio with one tool, `word_count`, on the MCP SDK's low-level `Server`. The
 * SDK is the one @ws/cli depends on, imported by its file URLs (the script runs from the workdir,
 * where no node_modules is).
 */
export function demoMcpServer(urls: { server: string; stdio: string; types: string }): string {
  return `// The ws demo's MCP server: one tool, word_count. Run by the workspace as: node text-server.mjs
import { Server } from ${JSON.stringify(urls.server)};
import { StdioServerTransport } from ${JSON.stringify(urls.stdio)};
import { CallToolRequestSchema, ListToolsRequestSchema } from ${JSON.stringify(urls.types)};

const server = new Server({ name: 'text', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'word_count',
      description: 'Counts the words and lines of a text.',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      annotations: { readOnlyHint: true },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const text = String(request.params.arguments?.text ?? '');
  const words = text.split(/\\s+/).filter(Boolean).length;
  const lines = text.split('\\n').filter(Boolean).length;
  return { content: [{ type: 'text', text: \`\${words} words, \${lines} lines\` }] };
});
await server.connect(new StdioServerTransport());
`;
}
