/** Waits for a promise at most `ms` (its failure is ignored: the command's result is what matters). */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  // The timer is ref'd on purpose: it keeps the process alive until the work settled or `ms` passed,
  // so that work whose own timers are unref'd still finishes before the command exits.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * Settles like `work`, or rejects with the signal's reason as soon as it fires, whether or not the
 * work heeds the signal (a vendor SDK call that does not take one goes on in the background; the
 * command exits anyway).
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
