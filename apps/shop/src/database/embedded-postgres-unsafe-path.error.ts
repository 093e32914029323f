/**
 * A folder or file the embedded PostgreSQL would use is a symbolic link, is
 * another user's, or others may write it: someone could have planted it to
 * read the server's password or run a program as its user, so the shop
 * stops rather than use it.
 */
export class EmbeddedPostgresUnsafePathError extends Error {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(
      `Refusing ${path}: ${reason}. The shop wrote nothing there. ` +
        'Remove it (or give it to the right user, with no write access for others), or run the shop on another folder (SHOP_DATA_DIR) or on a server of yours (DATABASE_URL).',
    );
    this.name = EmbeddedPostgresUnsafePathError.name;
  }
}
