/**
 * The shape of a node-postgres `Pool` (and of the client its `connect`
 * hands out) that the postgres driver uses, described here so that no `pg`
 * type reaches the typings of an app that does not install it. A `pg.Pool`
 * of yours fits as it is.
 */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
}

/** A client checked out of a PgPoolLike. */
export interface PgPoolClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  /** A named statement: parsed and planned once per connection, then only bound and run. */
  query(config: { name: string; text: string; values?: unknown[] }): Promise<{ rows: Array<Record<string, unknown>> }>;
  /** Gives the client back to the pool; with an error (or true) the pool closes it instead. */
  release(destroy?: Error | boolean): void;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  removeListener(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'end', listener: () => void): unknown;
}
