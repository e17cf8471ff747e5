/** The engines a suite may need besides Node.js. */
export type Engine = 'docker' | 'bubblewrap' | 'ripgrep' | 'build';

/** How a CI machine gets each engine; named in the failure when one is missing under `CI=true`. */
export const ENGINE_SETUP: Readonly<Record<Engine, string>> = {
  docker:
    "install Debian's docker.io, start dockerd and build the images with docker/build-image.sh (.ci/run does all three)",
  bubblewrap: "install Debian's bubblewrap (.ci/run does)",
  ripgrep: "install Debian's ripgrep on the host and in the image (.ci/run and docker/build-image.sh do)",
  build: 'build the packages with node scripts/setup.mjs (npm test does)',
};

/** The error a suite throws when an engine it needs is missing under `CI=true`. */
export class MissingEngineError extends Error {
  /** Always `MissingEngineError`. */
  override readonly name = 'MissingEngineError';

  constructor(
    /** The engine that is missing. */
    readonly engine: Engine,
    /** Why it is missing. */
    readonly problem: string,
  ) {
    super(`CI=true and ${engine} is missing: ${problem}. CI should ${ENGINE_SETUP[engine]}.`);
    // One line in the test report: where it was thrown says nothing the message does not.
    this.stack = `${this.name}: ${this.message}`;
  }
}

/** True when the environment says this is a CI run (`CI` set to anything but `0` or `false`). */
export function isCi(environment: NodeJS.ProcessEnv = process.env): boolean {
  const value = environment.CI?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/**
 * Decides what happens when an engine a suite needs is missing (`problem` says why; undefined when
 * the engine is there). Outside CI the suite skips: the reason is returned, for `describe.skipIf` or
 * a target's `skipReason`. Under `CI=true` a missing engine is a failure, never a skip: it throws a
 * {@link MissingEngineError}, one line naming what is missing and how CI should have installed it.
 * Called at the top of a test file, the throw fails the whole file.
 */
export function requireEngine(engine: Engine, problem: string | undefined): string | undefined {
  if (problem === undefined) return undefined;
  if (isCi()) throw new MissingEngineError(engine, problem);
  return problem;
}
