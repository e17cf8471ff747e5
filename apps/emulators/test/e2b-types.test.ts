import { expect, it } from 'vitest';
import type {
  EntryInfoMessage,
  ListedSandboxBody,
  ProcessStreamMessage,
  SandboxBody,
} from '../src/e2b/sdk-types.js';

// The emulator's response bodies are typed with the e2b SDK's own wire types: a body that lacks a field
// the SDK requires, or gives one of the wrong type, does not compile (`tsc` fails on an unused
// `@ts-expect-error` once the type stops catching it).
const created: SandboxBody = {
  sandboxID: 'abc',
  templateID: 'base',
  clientID: 'ws-emulator',
  envdVersion: '0.6.4',
};

// @ts-expect-error `envdVersion` is required by the SDK's `Sandbox` schema
const withoutVersion: SandboxBody = { sandboxID: 'abc', templateID: 'base', clientID: 'ws-emulator' };

const badState: ListedSandboxBody = {
  sandboxID: 'abc',
  templateID: 'base',
  clientID: 'ws-emulator',
  cpuCount: 2,
  memoryMB: 512,
  diskSizeMB: 0,
  startedAt: '2026-01-01T00:00:00Z',
  endAt: '2026-01-01T00:05:00Z',
  // @ts-expect-error `state` is `running` or `paused` in the SDK's `ListedSandbox` schema
  state: 'stopped',
  envdVersion: '0.6.4',
};

// @ts-expect-error a pid is a number in the SDK's `process.ProcessEvent.StartEvent`
const badStart: ProcessStreamMessage = { event: { event: { case: 'start', value: { pid: '1' } } } };

// @ts-expect-error a size is a bigint in the SDK's `filesystem.EntryInfo`
const badEntry: EntryInfoMessage = { name: 'a', path: '/a', size: 1 };

it('types the emulator bodies with the SDK wire types (checked by tsc)', () => {
  expect(created.envdVersion).toBe('0.6.4');
  expect([withoutVersion, badState, badStart, badEntry]).toHaveLength(4);
});
