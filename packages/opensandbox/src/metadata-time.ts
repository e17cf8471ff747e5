import { timeOf } from '@ws/core/backend';

/**
 * A time as a metadata value: milliseconds since the epoch in decimal. The server takes only
 * Kubernetes label values (up to 63 of `[A-Za-z0-9-_.]`), which an ISO 8601 time, with its colons, is not.
 */
export function metadataTime(date: Date = new Date()): string {
  return String(date.getTime());
}

/** True when `value` can be a metadata value the server stores: a Kubernetes label value. */
export function isLabelValue(value: string): boolean {
  return value.length <= 63 && /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/.test(value);
}

/** The time a metadata value names (decimal milliseconds, or ISO 8601 as older sandboxes have it); 0 when none. */
export function timeOfMetadata(value: string | undefined): number {
  if (value !== undefined && /^\d+$/.test(value)) return Number(value);
  return timeOf(value);
}
