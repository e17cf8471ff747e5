/**
 * An object of `@kubernetes/client-node`'s model `T` as the API server writes it in JSON: the model's
 * `Date` fields are RFC 3339 strings on the wire (the client's `ObjectSerializer` turns them into
 * dates). Every body the emulator sends is typed `Wire<V1…>` of the client's own model.
 */
export type Wire<T> = T extends Date
  ? string
  : T extends readonly (infer Item)[]
    ? Wire<Item>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;
