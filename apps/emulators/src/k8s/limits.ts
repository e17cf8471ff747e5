import type { LimitTable } from '../limits.js';

/**
 * The real API server's limits the emulator enforces (name with its unit → default). Sources, in
 * github.com/kubernetes/kubernetes:
 * - `requestBodyBytes`: the API server's `MaxRequestBodyBytes` default, 3 MiB
 *   (staging/src/k8s.io/apiserver/pkg/server/config.go); a larger body is a 413 `RequestEntityTooLarge`
 *   Status (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go, `limitedReadBody`).
 * - `requestsInFlight`: `--max-requests-inflight` 400 and `mutatingRequestsInFlight`:
 *   `--max-mutating-requests-inflight` 200 (staging/src/k8s.io/apiserver/pkg/server/options/
 *   server_run_options.go); past them a request is refused with 429 `TooManyRequests` and
 *   `Retry-After: 1` (staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go). Watches and
 *   exec are long-running requests and do not count.
 * - `podsPerNode`: the kubelet's `maxPods` default, 110 (pkg/kubelet/apis/config/v1beta1/defaults.go,
 *   staging/src/k8s.io/kubelet/config/v1beta1/types.go); the emulator is one node, so a Pod past it
 *   stays `Pending` with `PodScheduled=False`, reason `Unschedulable` ("Too many pods"), until one goes.
 * - `nameChars` 253 (a DNS-1123 subdomain, `DNS1123SubdomainMaxLength`), `labelValueChars` 63
 *   (`LabelValueMaxLength`) and `annotationsBytes` 262144 (`TotalAnnotationSizeLimitB`, 256 KiB of
 *   keys and values): staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go and
 *   staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go; past them a create is a 422
 *   `Invalid` Status naming the field.
 */
export const K8S_LIMITS = {
  /** The largest request body in bytes; past it, 413 `RequestEntityTooLarge`. */
  requestBodyBytes: 3 * 1024 * 1024,
  /** Requests handled at once (watches and exec not counted); past it, 429 `TooManyRequests`. */
  requestsInFlight: 400,
  /** Mutating requests handled at once; past it, 429 `TooManyRequests`. */
  mutatingRequestsInFlight: 200,
  /** Pods on the emulator's one node; a Pod past it stays `Pending` as `Unschedulable`. */
  podsPerNode: 110,
  /** The longest object name in characters; past it, 422 `Invalid`. */
  nameChars: 253,
  /** The longest label value in characters; past it, 422 `Invalid`. */
  labelValueChars: 63,
  /** The most bytes of an object's annotation keys and values together; past it, 422 `Invalid`. */
  annotationsBytes: 256 * 1024,
} as const satisfies LimitTable;

/** The names and values of {@link K8S_LIMITS}. */
export type K8sLimits = { readonly [K in keyof typeof K8S_LIMITS]: number };
