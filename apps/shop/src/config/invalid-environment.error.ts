/** Thrown at startup with every bad variable at once, so one restart fixes them all. */
export class InvalidEnvironmentError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid environment, the shop cannot start:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = InvalidEnvironmentError.name;
  }
}
