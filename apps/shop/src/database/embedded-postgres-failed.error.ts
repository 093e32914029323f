/** The embedded PostgreSQL could not be set up or started; the message carries the end of its log. */
export class EmbeddedPostgresFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = EmbeddedPostgresFailedError.name;
  }
}
