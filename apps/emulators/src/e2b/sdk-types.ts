// The wire types of the installed `e2b` SDK, for the emulator's response bodies (types only: nothing of
// the SDK is loaded by these imports, and none of these types is part of the package's public API).
import type { Commands, components, WatchHandle } from 'e2b';

type Schemas = components['schemas'];

/** `POST /v2/sandboxes` (201) and `POST /v2/sandboxes/{id}/connect` (200/201). */
export type SandboxBody = Schemas['Sandbox'];
/** One item of `GET /v2/sandboxes`. */
export type ListedSandboxBody = Schemas['ListedSandbox'];
/** `GET /sandboxes/{id}`. */
export type SandboxDetailBody = Schemas['SandboxDetail'];
/** The control plane's error body. */
export type ErrorBody = Schemas['Error'];

/**
 * A protobuf message of the SDK in the init shape the Connect router encodes from: its fields without
 * `$typeName`, each optional (proto3), nested messages and oneofs alike.
 */
export type MessageInit<T> = T extends Uint8Array | Date | bigint | boolean | string | number
  ? T
  : T extends readonly (infer Item)[]
    ? MessageInit<Item>[]
    : T extends { case: infer Case; value: infer Value }
      ? { case: Case; value: MessageInit<Value> }
      : T extends { case: undefined }
        ? { case: undefined; value?: undefined }
        : T extends object
          ? { [Key in keyof T as Key extends '$typeName' | '$unknown' ? never : Key]?: MessageInit<T[Key]> }
          : T;

// `process.Process` as the SDK's Commands calls it (its client is typed with the generated messages).
type ProcessRpc = Commands['rpc'];
type StreamItem<T> = T extends AsyncIterable<infer Item> ? Item : never;

/** `process.StartResponse` / `process.ConnectResponse`: one event of a process stream. */
export type ProcessStreamMessage = MessageInit<StreamItem<ReturnType<ProcessRpc['start']>>>;
/** `process.ListResponse`. */
export type ProcessListMessage = MessageInit<Awaited<ReturnType<ProcessRpc['list']>>>;

// `filesystem.EntryInfo` is reachable through the watch stream's event (the SDK's Filesystem client is
// private, so its messages are not typed elsewhere).
type WatchDirMessage = StreamItem<ConstructorParameters<typeof WatchHandle>[1]>;
type FilesystemEventMessage = Extract<WatchDirMessage['event'], { case: 'filesystem' }>['value'];

/** `filesystem.EntryInfo` (the entry of Stat, MakeDir and Move; the items of ListDir). */
export type EntryInfoMessage = MessageInit<NonNullable<FilesystemEventMessage['entry']>>;
