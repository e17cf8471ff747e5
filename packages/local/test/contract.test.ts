import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerConformanceSuite } from '@ws/contract-tests';
import { afterAll } from 'vitest';
import { LocalWorkspace } from '../src/index.js';

const base = mkdtempSync(join(tmpdir(), 'ws-local-conformance-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

await registerConformanceSuite({
  name: 'local',
  create: ({ workspaceId, ...options }) =>
    new LocalWorkspace({ ...options, workdir: join(base, workspaceId), workspaceId }),
});
