// OpenTelemetry spans through `@opentelemetry/api`, when the application has it: loaded once, never
// required. Without it (or without a tracer provider registered) nothing is recorded.
import type * as OtelApi from '@opentelemetry/api';

type Api = typeof OtelApi;

let api: Api | null | undefined;
let loading: Promise<void> | undefined;

/** The package's own name and version, as its spans' instrumentation scope. */
const SCOPE = '@ws/core';

/**
 * Where `@opentelemetry/api` (major version 1) keeps what the application registered: its global
 * tracer provider sits under `trace` once `trace.setGlobalTracerProvider()` (or an SDK's `register()`)
 * ran. Looked at without loading the API, so an application that traces nothing pays nothing.
 */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

function providerRegistered(): boolean {
  const registered = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OTEL_GLOBAL];
  return registered?.trace !== undefined;
}

/**
 * Loads `@opentelemetry/api` once a tracer provider is registered (the workspace's opening waits for
 * this; the application has loaded the API already, so it costs nothing): spans then go to that
 * provider. Without a registered provider nothing is loaded and tracing is off.
 */
export function loadTracing(): Promise<void> {
  if (api !== undefined || !providerRegistered()) return Promise.resolve();
  loading ??= import('@opentelemetry/api').then(
    (module) => {
      // The CommonJS build seen through ESM may put its exports on `default` only.
      const loaded = module as Partial<Api> & { default?: Api };
      api = loaded.trace ? (loaded as Api) : (loaded.default ?? null);
    },
    () => {
      api = null;
    },
  );
  return loading;
}

/** Attribute values a span takes. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** A span as this package uses it. */
export interface WsSpan {
  setAttributes(attributes: SpanAttributes): void;
  /** Ends it; with `error`, its status is ERROR, the error is recorded and `error.type` set. */
  end(error?: { type: string; message: string }): void;
}

const NO_SPAN: WsSpan = { setAttributes() {}, end() {} };

function clean(attributes: SpanAttributes): OtelApi.Attributes {
  const out: OtelApi.Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * Runs `body` inside a new span made current (spans begun inside it, the commands a tool runs, are
 * its children), a child of whatever span is current at the call (an agent framework's tool span).
 * Without tracing, runs `body` with a span that records nothing.
 */
export function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  body: (span: WsSpan) => Promise<T>,
): Promise<T> {
  if (!api) return body(NO_SPAN);
  const otel = api;
  const tracer = otel.trace.getTracer(SCOPE);
  return tracer.startActiveSpan(
    name,
    { kind: otel.SpanKind.INTERNAL, attributes: clean(attributes) },
    (span) => {
      if (!span.isRecording()) {
        span.end();
        return body(NO_SPAN);
      }
      return body({
        setAttributes: (more) => span.setAttributes(clean(more)),
        end: (error) => {
          if (error) {
            span.setStatus({ code: otel.SpanStatusCode.ERROR, message: error.message });
            span.setAttribute('error.type', error.type);
          }
          span.end();
        },
      });
    },
  );
}

/**
 * Whether spans are recorded: a tracer provider is registered with `@opentelemetry/api` and the API
 * was loaded by {@link loadTracing}. Register the provider before opening workspaces.
 */
export function tracingOn(): boolean {
  return !!api && providerRegistered();
}
