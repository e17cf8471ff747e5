import { Daytona, type DaytonaConfig } from '@daytonaio/sdk';
import { translateDaytonaError } from './errors.js';

/** How to reach Daytona: each field defaults to the SDK's environment (`DAYTONA_API_KEY`, …). */
export interface DaytonaConnection {
  /** The Daytona API key. Default: `DAYTONA_API_KEY`. */
  apiKey?: string | undefined;
  /** The Daytona API's URL. Default: `DAYTONA_API_URL`, else Daytona's own service. */
  apiUrl?: string | undefined;
  /** The target (region) sandboxes are created in. Default: `DAYTONA_TARGET`, else the SDK's. */
  target?: string | undefined;
  /** The time limit of one request to Daytona, in milliseconds (the SDK's `requestTimeoutMs`); default: none. */
  requestTimeoutMs?: number | undefined;
}

/** The SDK's client configuration: only what was given, so the SDK reads the rest from its environment. */
export function clientConfig(connection: DaytonaConnection): DaytonaConfig {
  const { apiKey, apiUrl, target, requestTimeoutMs } = connection;
  return {
    ...(apiKey ? { apiKey } : {}),
    ...(apiUrl ? { apiUrl } : {}),
    ...(target ? { target } : {}),
    ...(requestTimeoutMs !== undefined ? { requestTimeoutMs } : {}),
  };
}

/** A new SDK client; a missing key is `PERMISSION_DENIED`. */
export function newClient(connection: DaytonaConnection): Daytona {
  try {
    return new Daytona(clientConfig(connection));
  } catch (error) {
    throw translateDaytonaError(error, 'configuring the client');
  }
}
