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
  requestBodyBytes: 3 * 1024 * 1024,
  requestsInFlight: 400,
  mutatingRequestsInFlight: 200,
  podsPerNode: 110,
  nameChars: 253,
  labelValueChars: 63,
  annotationsBytes: 256 * 1024,
} as const satisfies LimitTable;

/** The names and values of {@link K8S_LIMITS}. */
export type K8sLimits = { readonly [K in keyof typeof K8S_LIMITS]: number };
