/** The shop's PostgreSQL did not answer at startup: the shop stops rather than serve without its data. */
export class DatabaseUnreachableError extends Error {
  constructor(
    readonly where: string,
    reason: string,
  ) {
    super(`Cannot reach the shop's database at ${where}: ${reason}`);
    this.name = DatabaseUnreachableError.name;
  }
}
