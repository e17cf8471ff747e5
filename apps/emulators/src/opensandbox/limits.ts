import type { LimitTable } from '../limits.js';

/**
 * The real service's limits the emulator enforces (name with its unit → default), read from the
 * OpenSandbox server and execd sources (github.com/alibaba/OpenSandbox).
 */
export const OPENSANDBOX_LIMITS = {
  /**
   * The shortest sandbox `timeout` of a create request: the request model's `timeout` field is `ge=60`
   * (server/opensandbox_server/api/schema.py, `CreateSandboxRequest`); a shorter one fails FastAPI's
   * validation with 422 and a `detail` list.
   */
  timeoutMinSeconds: 60,
  /**
   * The longest sandbox `timeout` of a create request: `server.max_sandbox_timeout_seconds`, 86 400 in
   * the shipped configuration (server/opensandbox_server/examples/example.config.toml; unset, there is
   * no bound). A longer one is 400 `SANDBOX::INVALID_PARAMETER`, "Sandbox timeout Ns exceeds configured
   * maximum of Ms." (server/opensandbox_server/services/validators.py, `ensure_timeout_within_limit`).
   * Renewals are not bounded by it.
   */
  timeoutMaxSeconds: 86_400,
  /**
   * The largest `pageSize` of a listing: `le=200` (server/opensandbox_server/api/lifecycle.py,
   * `list_sandboxes`); a larger one is 422.
   */
  pageSizeMax: 200,
  /**
   * Requests the lifecycle server handles at once before it answers 503 `Service Unavailable` (plain
   * text): `server.limit_concurrency`, default 1024, handed to uvicorn
   * (server/opensandbox_server/config.py). The emulator counts every request it is handling, execd's
   * included.
   */
  concurrentRequests: 1024,
  /**
   * Processes one sandbox may hold: `docker.pids_limit`, default 4096, the container's `PidsLimit`
   * (server/opensandbox_server/config.py `DockerConfig`, services/docker/container_ops.py); a fork past
   * it fails inside the sandbox with EAGAIN.
   */
  processesPerSandbox: 4096,
  /**
   * The largest request body execd's `POST /files/upload` takes; 0 (the default) for none: execd parses
   * the multipart form with gin, which keeps 32 MiB in memory and spills the rest to temporary files, and
   * sets no cap (components/execd/pkg/web/controller/filesystem_upload.go). A proxy in front of execd may
   * set one: past it the emulator answers 413 `REQUEST_ENTITY_TOO_LARGE`, as such a proxy does, once
   * the whole body has arrived.
   */
  uploadBytes: 0,
} as const satisfies LimitTable;

/** The names and values of {@link OPENSANDBOX_LIMITS}. */
export type OpenSandboxLimits = typeof OPENSANDBOX_LIMITS;
