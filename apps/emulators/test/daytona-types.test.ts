import { describe, expect, it } from 'vitest';
import type { ExecuteBody, SandboxBody, SandboxListBody } from '../src/daytona/sdk-types.js';

// The emulator's answers are typed with the SDK's generated models: a body that lacks a field the
// model requires does not compile. Were the model types lost (say, `any`), the `@ts-expect-error`
// lines below would be unused, and the typecheck fails on that.

describe('Daytona emulator response types', () => {
  it('are the SDK models, which refuse a body missing a required field', () => {
    // @ts-expect-error `toolboxProxyUrl` (and more) are required in the SDK's `Sandbox`
    const sandbox: SandboxBody = { id: 'x', organizationId: 'o', name: 'x' };
    // @ts-expect-error `result` is required in `ExecuteResponse`
    const executed: ExecuteBody = { exitCode: 0 };
    // @ts-expect-error a page names its `nextCursor` (null on the last)
    const page: SandboxListBody = { items: [] };
    expect([sandbox.id, executed.exitCode, page.items]).toEqual(['x', 0, []]);
  });
});
