/**
 * Keeps the driver's own writes to one (topic, key) in the order they were
 * made. The pool runs statements on several connections at once, so two
 * calls made together could otherwise reach the database in either order;
 * calls made together must read as if made one after another, as on the
 * other drivers. Writes to different keys still run in parallel. (Writes in
 * the application's transaction go through its one connection, in order.)
 */
export class WriteOrder {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(ids: readonly string[], work: () => Promise<T>): Promise<T> {
    const before: Array<Promise<void>> = [];
    for (const id of ids) {
      const tail = this.tails.get(id);
      if (tail) before.push(tail);
    }
    const result = before.length === 0 ? work() : Promise.all(before).then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    for (const id of ids) this.tails.set(id, tail);
    void tail.then(() => {
      for (const id of ids) if (this.tails.get(id) === tail) this.tails.delete(id);
    });
    return result;
  }
}

/** The write-order id of a topic's key (U+0000 cannot occur in either: PostgreSQL text cannot hold it). */
export function writeId(topic: string, key: string): string {
  return `${topic}\u0000${key}`;
}
