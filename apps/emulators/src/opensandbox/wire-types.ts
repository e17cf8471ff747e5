import type { ExecdPaths, LifecyclePaths } from '@alibaba-group/opensandbox/internal';

// The bodies the emulator sends, typed with the OpenSandbox SDK's own generated OpenAPI types (of the
// lifecycle API and of execd), so that a body missing a field the SDK relies on does not compile.
// Internal to the emulator: no exported type of @ws/emulators names them.

type Method = 'get' | 'post' | 'patch' | 'delete';

/** The body of one response of an operation, by its media type. */
type BodyOf<Operation, Status extends number, Media extends string = 'application/json'> = Operation extends {
  responses: infer Responses;
}
  ? Status extends keyof Responses
    ? Responses[Status] extends { content: { [M in Media]: infer Body } }
      ? Body
      : never
    : never
  : never;

type Lifecycle<Path extends keyof LifecyclePaths, M extends Method, Status extends number> = BodyOf<
  LifecyclePaths[Path][M],
  Status
>;
type Execd<
  Path extends keyof ExecdPaths,
  M extends Method,
  Status extends number,
  Media extends string = 'application/json',
> = BodyOf<ExecdPaths[Path][M], Status, Media>;

/** The lifecycle API's `Sandbox` (`GET /sandboxes/{sandboxId}`). */
export type SandboxBody = Lifecycle<'/sandboxes/{sandboxId}', 'get', 200>;
/** `POST /sandboxes`: 202 with `CreateSandboxResponse`. */
export type CreateSandboxBody = Lifecycle<'/sandboxes', 'post', 202>;
/** `GET /sandboxes`: `ListSandboxesResponse`. */
export type ListSandboxesBody = Lifecycle<'/sandboxes', 'get', 200>;
/** `PATCH /sandboxes/{sandboxId}/metadata`: the whole `Sandbox`. */
export type PatchMetadataBody = Lifecycle<'/sandboxes/{sandboxId}/metadata', 'patch', 200>;
/** `POST /sandboxes/{sandboxId}/renew-expiration`: `RenewSandboxExpirationResponse`. */
export type RenewExpirationBody = Lifecycle<'/sandboxes/{sandboxId}/renew-expiration', 'post', 200>;
/** `GET /sandboxes/{sandboxId}/endpoints/{port}`: `Endpoint`. */
export type EndpointBody = Lifecycle<'/sandboxes/{sandboxId}/endpoints/{port}', 'get', 200>;
/** The lifecycle API's `ErrorResponse` (`{code, message}`). */
export type LifecycleErrorBody = Lifecycle<'/sandboxes/{sandboxId}', 'get', 404>;

/** execd's `ErrorResponse` (`{code, message}`). */
export type ExecdErrorBody = Execd<'/files/info', 'get', 404>;
/** execd's `ServerStreamEvent`: one event of a command's stream. */
export type StreamEventBody = Execd<'/command', 'post', 200, 'text/event-stream'>;
/** `GET /command/status/{id}`: `CommandStatusResponse`. */
export type CommandStatusBody = Execd<'/command/status/{id}', 'get', 200>;
/** `POST /session`: `CreateSessionResponse`. */
export type CreateSessionBody = Execd<'/session', 'post', 200>;
/** `GET /files/info`: path → `FileInfo`. */
export type FilesInfoBody = Execd<'/files/info', 'get', 200>;
/** execd's `FileInfo`. */
export type FileInfoBody = FilesInfoBody[string];
/** `GET /directories/list`: `FileInfo[]`. */
export type ListDirectoryBody = Execd<'/directories/list', 'get', 200>;
/** `GET /files/search`: `FileInfo[]`. */
export type SearchFilesBody = Execd<'/files/search', 'get', 200>;
/** `POST /files/replace`: path → `ReplaceFileContentResult`. */
export type ReplaceContentBody = Execd<'/files/replace', 'post', 200>;
