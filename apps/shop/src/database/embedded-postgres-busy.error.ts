/** The embedded PostgreSQL's data folder is in use by another shop (or another PostgreSQL): this one stops rather than share it. */
export class EmbeddedPostgresBusyError extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
    by: 'shop' | 'postgres',
  ) {
    super(
      `The data folder ${dir} is in use by ${by === 'shop' ? 'another shop' : 'a PostgreSQL server'} (PID ${pid}): ` +
        'stop that one first (Ctrl-C in its terminal), or run this one on another folder (SHOP_DATA_DIR) or on a server of yours (DATABASE_URL). ' +
        'Nothing in the folder was changed.',
    );
    this.name = EmbeddedPostgresBusyError.name;
  }
}
