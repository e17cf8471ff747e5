import { throwIfAborted, WsError } from '../../contracts/errors.js';

/** The longest glob {@link compileGlob} accepts, in UTF-16 code units (`pattern.length`). */
export const GLOB_MAX_PATTERN_LENGTH = 4_096;
/** The deepest `{…}` nesting {@link compileGlob} accepts (`{{a}}` nests 2 deep). */
export const GLOB_MAX_BRACE_DEPTH = 32;
/** The most `{…}` alternatives one glob may hold, counted over all its braces (`{a,b}{c,d}` holds 4). */
export const GLOB_MAX_ALTERNATIVES = 1_024;

/** A compiled glob. */
export interface GlobMatcher {
  /** True when the whole relative path matches the glob. */
  test(path: string): boolean;
}

/**
 * Compiles a glob (relative, `/`-separated) into a matcher over relative paths. The whole path must
 * match (the glob is anchored at both ends) and dotfiles are matched like any other name.
 *
 * - `*` is any run of characters other than `/`; `?` is one character other than `/`.
 * - `**` as a whole segment spans segments: `**` followed by `/` (at the start or after a `/`) is zero
 *   or more whole segments, and a final `**` (at the start or after a `/`) is anything, `/` included.
 *   Anywhere else `**` acts like `*`.
 * - `[abc]`, `[a-z]`, `[!x]` and `[^x]` are character classes; they never match `/`. A `]` right after
 *   the `[` (or the `!`/`^`) is a literal `]`, and `\` is literal inside a class.
 * - `{a,b}` are alternatives, which may nest and may be empty.
 * - `\` makes the next character literal; a `\` at the very end is a literal `\`.
 *
 * Characters are Unicode code points, so an emoji or a CJK character is one character for `?`.
 *
 * The glob becomes a Thompson NFA (no recursion, whatever the nesting), simulated one path character at
 * a time with the set of active states, each state at most once per step; the sets met are cached as
 * the states of a DFA (up to a fixed number of them), so a typical glob costs one table look-up per
 * character. `test` never backtracks: its time is linear in the path's length, times a factor bounded
 * by the glob's size, whatever the glob and the path. A matcher may be reused for any number of paths
 * (and should be: its cache is what makes it fast).
 *
 * @throws WsError `INVALID_ARGUMENT` for an unclosed `[` or `{`, a class range out of order (`[z-a]`),
 *   or a glob over the limits: {@link GLOB_MAX_PATTERN_LENGTH} characters, {@link GLOB_MAX_BRACE_DEPTH}
 *   nested braces or {@link GLOB_MAX_ALTERNATIVES} alternatives.
 */
export function compileGlob(pattern: string): GlobMatcher {
  return new GlobAutomaton(buildProgram(pattern));
}

// Paths tested between two turns of the event loop: long enough to cost little, short enough that
// one huge glob over a huge tree never holds up the rest of the process (timers, other workspaces).
const FILTER_CHUNK = 2_048;

/**
 * The items that `keep` accepts, tested in chunks with a turn of the event loop in between, so a
 * costly glob over many paths neither freezes the process nor outlives `signal`.
 * @throws WsError `ABORTED` when `signal` fires.
 */
export async function filterYielding<T>(
  items: readonly T[],
  keep: (item: T) => boolean,
  signal?: AbortSignal,
): Promise<T[]> {
  const kept: T[] = [];
  for (let start = 0; start < items.length; start += FILTER_CHUNK) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    throwIfAborted(signal);
    const end = Math.min(items.length, start + FILTER_CHUNK);
    for (let index = start; index < end; index++) if (keep(items[index]!)) kept.push(items[index]!);
  }
  return kept;
}

/** True when the glob holds any special character (so it cannot be taken as a literal path). */
export function hasGlobSyntax(text: string): boolean {
  return /[*?[{\\]/.test(text);
}

// Instructions. The first five consume one code point and go on to `out`; the last two are ε-moves.
/** One code point equal to `arg`. */
const OP_CHAR = 0;
/** One code point other than `/`. */
const OP_ONE = 1;
/** Any one code point. */
const OP_ANY = 2;
/** One code point other than `/` inside class number `arg`. */
const OP_CLASS = 3;
/** One code point other than `/` outside class number `arg`. */
const OP_NOT_CLASS = 4;
/** The glob has matched (when the path is used up). */
const OP_MATCH = 5;
/** Goes on to both `out` and `out2`. */
const OP_SPLIT = 6;
/** Goes on to `out`. */
const OP_JUMP = 7;

const SLASH = 0x2f;

/** The most entries the precomputed ε-closures may take; past it they are followed while matching. */
const CLOSURE_BUDGET = 1 << 16;

interface Program {
  op: Uint8Array;
  arg: Int32Array;
  out: Int32Array;
  out2: Int32Array;
  start: number;
  match: number;
  /** Inclusive code point ranges `[low, high, low, high, …]` of every class. */
  classRanges: Int32Array;
  /** Class `k`'s ranges are `classRanges[classStarts[k] .. classStarts[k + 1]]`. */
  classStarts: Int32Array;
  /** For each state, the consuming (and match) states its ε-closure holds, when they fit the budget. */
  closures: { starts: Int32Array; states: Int32Array } | undefined;
}

// Which loop was appended last, so that a run of `*` (or of `**` segments) makes one loop.
const LOOP_NONE = 0;
const LOOP_STAR = 1;
const LOOP_GLOBSTAR = 2;

interface BraceFrame {
  /** The SPLIT that tries the current alternative (`out`) or the next ones (`out2`). */
  fork: number;
  /** The last state of each finished alternative; their `out` joins what follows the `}`. */
  ends: number[];
}

function invalid(message: string): WsError {
  return new WsError('INVALID_ARGUMENT', message);
}

/** Parses the glob into a Thompson NFA, with an explicit stack for braces (no recursion). */
function buildProgram(pattern: string): Program {
  if (pattern.length > GLOB_MAX_PATTERN_LENGTH)
    throw invalid(
      `Glob pattern too long: ${pattern.length} characters (the limit is ${GLOB_MAX_PATTERN_LENGTH})`,
    );
  const chars = Array.from(pattern);
  const op: number[] = [];
  const arg: number[] = [];
  const out: number[] = [];
  const out2: number[] = [];
  const classRanges: number[] = [];
  const classStarts: number[] = [0];
  const add = (code: number, argument = 0, next = -1, other = -1): number => {
    op.push(code);
    arg.push(argument);
    out.push(next);
    out2.push(other);
    return op.length - 1;
  };
  const start = add(OP_JUMP);
  // The state whose `out` is still open: what comes next in the glob is attached there.
  let tail = start;
  let lastLoop: number = LOOP_NONE;
  const append = (state: number) => {
    out[tail] = state;
    tail = state;
    lastLoop = LOOP_NONE;
  };
  /** Appends a loop: zero or more times the body `makeBody` builds, which must lead back to `loop`. */
  const appendLoop = (kind: number, makeBody: (loop: number) => number) => {
    const loop = add(OP_SPLIT);
    out2[loop] = makeBody(loop);
    append(loop);
    lastLoop = kind;
  };
  const frames: BraceFrame[] = [];
  let alternatives = 0;
  const countAlternative = () => {
    if (++alternatives > GLOB_MAX_ALTERNATIVES)
      throw invalid(`Glob has too many {…} alternatives (the limit is ${GLOB_MAX_ALTERNATIVES})`);
  };

  let index = 0;
  while (index < chars.length) {
    const char = chars[index]!;
    if (frames.length > 0 && (char === ',' || char === '}')) {
      const frame = frames[frames.length - 1]!;
      frame.ends.push(tail);
      if (char === ',') {
        countAlternative();
        const fork = add(OP_SPLIT);
        out2[frame.fork] = fork;
        frame.fork = fork;
        tail = fork;
      } else {
        // The last alternative has no other one to try.
        op[frame.fork] = OP_JUMP;
        const join = add(OP_JUMP);
        for (const end of frame.ends) out[end] = join;
        frames.pop();
        tail = join;
      }
      lastLoop = LOOP_NONE;
      index++;
      continue;
    }
    if (char === '*') {
      if (chars[index + 1] === '*') {
        const atSegmentStart = index === 0 || chars[index - 1] === '/';
        const next = chars[index + 2];
        if (atSegmentStart && next === '/') {
          // (?:[^/]*/)* — zero or more whole segments.
          if (lastLoop !== LOOP_GLOBSTAR)
            appendLoop(LOOP_GLOBSTAR, (loop) => {
              const segment = add(OP_SPLIT);
              out[segment] = add(OP_ONE, 0, segment);
              out2[segment] = add(OP_CHAR, SLASH, loop);
              return segment;
            });
          index += 3;
          continue;
        }
        if (atSegmentStart && next === undefined) {
          appendLoop(LOOP_NONE, (loop) => add(OP_ANY, 0, loop));
          index += 2;
          continue;
        }
      }
      if (lastLoop !== LOOP_STAR) appendLoop(LOOP_STAR, (loop) => add(OP_ONE, 0, loop));
      index++;
      continue;
    }
    if (char === '?') {
      append(add(OP_ONE));
      index++;
      continue;
    }
    if (char === '\\') {
      const next = chars[index + 1];
      append(add(OP_CHAR, (next ?? '\\').codePointAt(0)!));
      index += next === undefined ? 1 : 2;
      continue;
    }
    if (char === '[') {
      const close = findClassEnd(chars, index);
      if (close === -1) throw invalid(`Unclosed [ in glob ${JSON.stringify(pattern)}`);
      let body = index + 1;
      const negate = chars[body] === '!' || chars[body] === '^';
      if (negate) body++;
      while (body < close) {
        const low = chars[body]!.codePointAt(0)!;
        if (chars[body + 1] === '-' && body + 2 < close) {
          const high = chars[body + 2]!.codePointAt(0)!;
          if (high < low)
            throw invalid(`Range out of order in class ${chars.slice(index, close + 1).join('')} of glob`);
          classRanges.push(low, high);
          body += 3;
        } else {
          classRanges.push(low, low);
          body++;
        }
      }
      classStarts.push(classRanges.length);
      append(add(negate ? OP_NOT_CLASS : OP_CLASS, classStarts.length - 2));
      index = close + 1;
      continue;
    }
    if (char === '{') {
      if (frames.length >= GLOB_MAX_BRACE_DEPTH)
        throw invalid(`Glob braces nest too deeply (the limit is ${GLOB_MAX_BRACE_DEPTH} levels)`);
      countAlternative();
      const fork = add(OP_SPLIT);
      append(fork);
      frames.push({ fork, ends: [] });
      index++;
      continue;
    }
    append(add(OP_CHAR, char.codePointAt(0)!));
    index++;
  }
  if (frames.length > 0) throw invalid(`Unclosed { in glob ${JSON.stringify(pattern)}`);
  const match = add(OP_MATCH);
  out[tail] = match;

  const program: Program = {
    op: Uint8Array.from(op),
    arg: Int32Array.from(arg),
    out: Int32Array.from(out),
    out2: Int32Array.from(out2),
    start,
    match,
    classRanges: Int32Array.from(classRanges),
    classStarts: Int32Array.from(classStarts),
    closures: undefined,
  };
  program.closures = computeClosures(program);
  return program;
}

/** Where the class opened at `open` closes, or -1. A `]` first in the class is literal. */
function findClassEnd(chars: readonly string[], open: number): number {
  let index = open + 1;
  if (chars[index] === '!' || chars[index] === '^') index++;
  if (chars[index] === ']') index++;
  for (; index < chars.length; index++) if (chars[index] === ']') return index;
  return -1;
}

/**
 * The ε-closure (as consuming and match states) of the start state and of every state a consuming state
 * leads to, or undefined when they would take more than {@link CLOSURE_BUDGET} entries.
 */
function computeClosures(program: Program): Program['closures'] {
  const { op, out, start } = program;
  const count = op.length;
  const needed = new Uint8Array(count);
  needed[start] = 1;
  for (let state = 0; state < count; state++) if (op[state]! < OP_MATCH) needed[out[state]!] = 1;
  const starts = new Int32Array(count + 1);
  const states: number[] = [];
  const seen = new Int32Array(count);
  const stack = new Int32Array(count);
  const collect = (member: number) => {
    states.push(member);
  };
  for (let state = 0; state < count; state++) {
    starts[state] = states.length;
    if (!needed[state]) continue;
    walkClosure(program, state, seen, state + 1, stack, collect);
    if (states.length > CLOSURE_BUDGET) return undefined;
  }
  starts[count] = states.length;
  return { starts, states: Int32Array.from(states) };
}

/**
 * Walks the ε-closure of `state` with an explicit stack and hands each consuming or match state in it
 * to `visit`. States are marked `seen[s] = stamp` as they are reached; a marked one (`state` included)
 * is not walked again.
 */
function walkClosure(
  program: Program,
  state: number,
  seen: Int32Array | Uint32Array,
  stamp: number,
  stack: Int32Array,
  visit: (member: number) => void,
): void {
  const { op, out, out2 } = program;
  if (seen[state] === stamp) return;
  seen[state] = stamp;
  stack[0] = state;
  let top = 1;
  while (top > 0) {
    const current = stack[--top]!;
    const code = op[current]!;
    if (code === OP_SPLIT || code === OP_JUMP) {
      const following = out[current]!;
      if (seen[following] !== stamp) {
        seen[following] = stamp;
        stack[top++] = following;
      }
      if (code === OP_SPLIT) {
        const other = out2[current]!;
        if (seen[other] !== stamp) {
          seen[other] = stamp;
          stack[top++] = other;
        }
      }
    } else {
      visit(current);
    }
  }
}

/** DFA state 0 holds no NFA state: nothing can match any more. */
const DEAD = 0;
/** A transition not computed yet (or, from `#transition`, one the full cache could not take). */
const UNKNOWN = -1;
/** The most DFA states one matcher caches. */
const DFA_MAX_STATES = 512;
/** The most NFA states the cached DFA states may hold in all. */
const DFA_MAX_ENTRIES = 1 << 16;
/** The most cached transitions on non-ASCII code points. */
const DFA_MAX_OTHER_TRANSITIONS = 1 << 16;

/**
 * Runs the NFA as a lazily built DFA: each DFA state is a set of NFA states (found by simulating the
 * NFA one step, with generation-stamped marks that dedupe the set) and its transitions are cached, in
 * a table for ASCII and a map for other code points. Matching a path then costs one table look-up per
 * character once the few DFA states it needs are known. When the cache is full, the rest of the path
 * is matched by simulating the NFA directly; either way each character costs at most one NFA step.
 */
class GlobAutomaton implements GlobMatcher {
  readonly #program: Program;
  // NFA simulation: two state sets, reused, and the marks that dedupe them.
  readonly #current: Int32Array;
  readonly #next: Int32Array;
  /** The generation that last put each state into the set being built. */
  readonly #marks: Uint32Array;
  /** The generation that last expanded each state's closure (with precomputed closures). */
  readonly #expanded: Uint32Array;
  /** Work stack for following ε-moves when the closures were not precomputed. */
  readonly #stack: Int32Array;
  #generation = 0;
  /** How many NFA states `#transition` left in `#next`. */
  #pending = 0;
  // The DFA cache.
  readonly #sets: Int32Array[] = [];
  readonly #accepting: boolean[] = [];
  readonly #ids = new Map<string, number>();
  #entries = 0;
  /** `#ascii[state * 128 + char]`: the next DFA state, or UNKNOWN. */
  #ascii = new Int32Array(16 * 128).fill(UNKNOWN);
  /** Keyed by `state * 0x110000 + char`. */
  readonly #other = new Map<number, number>();
  readonly #start: number;

  constructor(program: Program) {
    this.#program = program;
    const count = program.op.length;
    this.#current = new Int32Array(count);
    this.#next = new Int32Array(count);
    this.#marks = new Uint32Array(count);
    this.#expanded = new Uint32Array(program.closures ? count : 0);
    this.#stack = new Int32Array(program.closures ? 0 : count);
    this.#intern(this.#next, 0); // DEAD
    this.#start = this.#intern(
      this.#next,
      this.#expand(program.start, this.#next, 0, this.#nextGeneration()),
    );
  }

  test(path: string): boolean {
    const length = path.length;
    let state = this.#start;
    for (let index = 0; index < length; ) {
      const char = path.codePointAt(index)!;
      index += char > 0xffff ? 2 : 1;
      let next =
        char < 128 ? this.#ascii[state * 128 + char]! : (this.#other.get(state * 0x110000 + char) ?? UNKNOWN);
      if (next === UNKNOWN) {
        next = this.#transition(state, char);
        if (next === UNKNOWN) return this.#simulate(path, index);
      }
      if (next === DEAD) return false;
      state = next;
    }
    return this.#accepting[state]!;
  }

  /** Computes (and caches, when there is room) the DFA transition; leaves the NFA set in `#next`. */
  #transition(state: number, char: number): number {
    const from = this.#sets[state]!;
    const count = this.#step(from, from.length, char, this.#next, this.#nextGeneration());
    this.#pending = count;
    const target = this.#intern(this.#next, count);
    if (target === UNKNOWN) return UNKNOWN;
    if (char < 128) this.#ascii[state * 128 + char] = target;
    else if (this.#other.size < DFA_MAX_OTHER_TRANSITIONS) this.#other.set(state * 0x110000 + char, target);
    return target;
  }

  /** The DFA state for this set of NFA states (sorted in place), or UNKNOWN when the cache is full. */
  #intern(set: Int32Array, count: number): number {
    const members = set.subarray(0, count).sort();
    const key = members.join(',');
    const known = this.#ids.get(key);
    if (known !== undefined) return known;
    // DEAD and the start state always fit.
    if (
      this.#sets.length >= 2 &&
      (this.#sets.length >= DFA_MAX_STATES || this.#entries + count > DFA_MAX_ENTRIES)
    )
      return UNKNOWN;
    const id = this.#sets.length;
    this.#sets.push(members.slice());
    this.#accepting.push(count > 0 && members[count - 1] === this.#program.match);
    this.#ids.set(key, id);
    this.#entries += count;
    if ((id + 1) * 128 > this.#ascii.length) {
      const grown = new Int32Array(this.#ascii.length * 2).fill(UNKNOWN);
      grown.set(this.#ascii);
      this.#ascii = grown;
    }
    return id;
  }

  /** Matches the rest of the path from `index` by NFA simulation, from the set `#transition` left. */
  #simulate(path: string, index: number): boolean {
    let current = this.#next;
    let next = this.#current;
    let count = this.#pending;
    while (index < path.length) {
      const char = path.codePointAt(index)!;
      index += char > 0xffff ? 2 : 1;
      count = this.#step(current, count, char, next, this.#nextGeneration());
      if (count === 0) return false;
      const swap = current;
      current = next;
      next = swap;
    }
    const match = this.#program.match;
    for (let position = 0; position < count; position++) if (current[position] === match) return true;
    return false;
  }

  #nextGeneration(): number {
    if (this.#generation === 0xffff_ffff) {
      this.#marks.fill(0);
      this.#expanded.fill(0);
      this.#generation = 0;
    }
    return ++this.#generation;
  }

  /** One NFA step: the states `char` leads to from the first `count` of `from`, into `into`; returns how many. */
  #step(from: Int32Array, count: number, char: number, into: Int32Array, generation: number): number {
    const { op, arg, out, classRanges, classStarts } = this.#program;
    let size = 0;
    for (let position = 0; position < count; position++) {
      const state = from[position]!;
      const code = op[state]!;
      let accepts: boolean;
      if (code === OP_CHAR) accepts = char === arg[state];
      else if (code === OP_ONE) accepts = char !== SLASH;
      else if (code === OP_ANY) accepts = true;
      else if (code === OP_CLASS || code === OP_NOT_CLASS) {
        if (char === SLASH) accepts = false;
        else {
          const number = arg[state]!;
          let inside = false;
          for (let range = classStarts[number]!; range < classStarts[number + 1]!; range += 2) {
            if (char >= classRanges[range]! && char <= classRanges[range + 1]!) {
              inside = true;
              break;
            }
          }
          accepts = inside === (code === OP_CLASS);
        }
      } else accepts = false;
      if (accepts) size = this.#expand(out[state]!, into, size, generation);
    }
    return size;
  }

  /** Adds the consuming (and match) states of `state`'s ε-closure to `set`; returns the new size. */
  #expand(state: number, set: Int32Array, size: number, generation: number): number {
    const marks = this.#marks;
    const closures = this.#program.closures;
    if (closures) {
      if (this.#expanded[state] === generation) return size;
      this.#expanded[state] = generation;
      const { starts, states } = closures;
      for (let entry = starts[state]!, end = starts[state + 1]!; entry < end; entry++) {
        const member = states[entry]!;
        if (marks[member] !== generation) {
          marks[member] = generation;
          set[size++] = member;
        }
      }
      return size;
    }
    let added = size;
    walkClosure(this.#program, state, marks, generation, this.#stack, (member) => {
      set[added++] = member;
    });
    return added;
  }
}
