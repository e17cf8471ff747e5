import type { FileSystem, Process, Sandbox } from '@daytonaio/sdk';

// The response bodies the emulator builds, typed with the SDK's own generated models. The SDK
// re-exports only some of them; the rest are read off its generated API clients (the classes its
// public classes are constructed with), so that a model the SDK changes fails the emulator's build.

/** The generated control-plane client (`SandboxApi`) the SDK's `Sandbox` is given. */
type SandboxApi = ConstructorParameters<typeof Sandbox>[3];
/** The generated toolbox clients the SDK's `Process` and `FileSystem` are given. */
type ProcessApi = ConstructorParameters<typeof Process>[1];
type FileSystemApi = ConstructorParameters<typeof FileSystem>[1];

/** The body of a generated client method's answer. */
type Body<Method extends (...args: never[]) => Promise<{ data: unknown }>> = Awaited<
  ReturnType<Method>
>['data'];

/** `Sandbox`: what create, get, start, stop, archive, delete and the interval routes answer. */
export type SandboxBody = Body<SandboxApi['getSandbox']>;
/** `ListSandboxesResponse`: one page of `GET /sandbox`. */
export type SandboxListBody = Body<SandboxApi['listSandboxes']>;
/** `SandboxListItem`: a sandbox in a listing. */
export type SandboxListItemBody = SandboxListBody['items'][number];
/** `SandboxLabels`: the answer of `PUT /sandbox/{id}/labels`. */
export type SandboxLabelsBody = Body<SandboxApi['replaceLabels']>;
/** `ToolboxProxyUrl`. */
export type ToolboxProxyUrlBody = Body<SandboxApi['getToolboxProxyUrl']>;

/** `ExecuteResponse` of `POST /process/execute`. */
export type ExecuteBody = Body<ProcessApi['executeCommand']>;
/** `Session`, `Command`, `SessionExecuteResponse` and `SessionCommandLogsResponse`. */
export type SessionBody = Body<ProcessApi['getSession']>;
export type CommandBody = Body<ProcessApi['getSessionCommand']>;
export type SessionExecuteBody = Body<ProcessApi['sessionExecuteCommand']>;
export type SessionCommandLogsBody = Body<ProcessApi['getSessionCommandLogs']>;

/** `FileInfo`, `Match`, `ReplaceResult` and `SearchFilesResponse` of the file routes. */
export type FileInfoBody = Body<FileSystemApi['getFileInfo']>;
export type MatchBody = Body<FileSystemApi['findInFiles']>[number];
export type ReplaceResultBody = Body<FileSystemApi['replaceInFiles']>[number];
export type SearchFilesBody = Body<FileSystemApi['searchFiles']>;
