// BLAKE2b (RFC 7693) with a chosen digest length, unkeyed. Node's crypto offers BLAKE2b only with its
// full 64-byte digest, and a shorter BLAKE2b digest is not a prefix of that one (the length is part
// of the parameter block), so the 16-byte digests workspace ids are derived with need this.

const MASK = (1n << 64n) - 1n;

const IV = [
  0x6a09e667f3bcc908n,
  0xbb67ae8584caa73bn,
  0x3c6ef372fe94f82bn,
  0xa54ff53a5f1d36f1n,
  0x510e527fade682d1n,
  0x9b05688c2b3e6c1fn,
  0x1f83d9abfb41bd6bn,
  0x5be0cd19137e2179n,
] as const;

const SIGMA: readonly (readonly number[])[] = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
  [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
  [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
  [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
  [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
  [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
  [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
  [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
  [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

const rotr = (value: bigint, bits: bigint): bigint => ((value >> bits) | (value << (64n - bits))) & MASK;

function compress(state: bigint[], block: Uint8Array, counter: bigint, last: boolean): void {
  const view = new DataView(block.buffer, block.byteOffset, 128);
  const m = Array.from({ length: 16 }, (_, index) => view.getBigUint64(index * 8, true));
  const v: bigint[] = [...state, ...IV];
  v[12] = (v[12] as bigint) ^ (counter & MASK);
  v[13] = (v[13] as bigint) ^ (counter >> 64n);
  if (last) v[14] = (v[14] as bigint) ^ MASK;
  const mix = (a: number, b: number, c: number, d: number, x: bigint, y: bigint): void => {
    v[a] = ((v[a] as bigint) + (v[b] as bigint) + x) & MASK;
    v[d] = rotr((v[d] as bigint) ^ (v[a] as bigint), 32n);
    v[c] = ((v[c] as bigint) + (v[d] as bigint)) & MASK;
    v[b] = rotr((v[b] as bigint) ^ (v[c] as bigint), 24n);
    v[a] = ((v[a] as bigint) + (v[b] as bigint) + y) & MASK;
    v[d] = rotr((v[d] as bigint) ^ (v[a] as bigint), 16n);
    v[c] = ((v[c] as bigint) + (v[d] as bigint)) & MASK;
    v[b] = rotr((v[b] as bigint) ^ (v[c] as bigint), 63n);
  };
  for (let round = 0; round < 12; round++) {
    const s = SIGMA[round % 10] as readonly number[];
    const word = (index: number): bigint => m[s[index] as number] as bigint;
    mix(0, 4, 8, 12, word(0), word(1));
    mix(1, 5, 9, 13, word(2), word(3));
    mix(2, 6, 10, 14, word(4), word(5));
    mix(3, 7, 11, 15, word(6), word(7));
    mix(0, 5, 10, 15, word(8), word(9));
    mix(1, 6, 11, 12, word(10), word(11));
    mix(2, 7, 8, 13, word(12), word(13));
    mix(3, 4, 9, 14, word(14), word(15));
  }
  for (let index = 0; index < 8; index++)
    state[index] = (state[index] as bigint) ^ (v[index] as bigint) ^ (v[index + 8] as bigint);
}

/** The unkeyed BLAKE2b digest of `input` (UTF-8 for a string), `digestBytes` (1–64) long, as lower-case hex. */
export function blake2bHex(input: string | Uint8Array, digestBytes: number): string {
  if (!Number.isInteger(digestBytes) || digestBytes < 1 || digestBytes > 64)
    throw new RangeError(`A BLAKE2b digest is 1 to 64 bytes, not ${digestBytes}`);
  const data = typeof input === 'string' ? new TextEncoder().encode(input) : input;
  const state: bigint[] = [...IV];
  state[0] = (state[0] as bigint) ^ (0x01010000n | BigInt(digestBytes));
  const block = new Uint8Array(128);
  let offset = 0;
  // Every full block but the last is compressed as it comes; the last (possibly empty) one is final.
  while (data.length - offset > 128) {
    block.set(data.subarray(offset, offset + 128));
    offset += 128;
    compress(state, block, BigInt(offset), false);
  }
  block.fill(0);
  block.set(data.subarray(offset));
  compress(state, block, BigInt(data.length), true);
  const out = new Uint8Array(64);
  const view = new DataView(out.buffer);
  for (const [index, word] of state.entries()) view.setBigUint64(index * 8, word, true);
  return Buffer.from(out.subarray(0, digestBytes)).toString('hex');
}
