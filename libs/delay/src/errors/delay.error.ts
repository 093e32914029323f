/**
 * Base class of every error nestjs-delay throws on purpose. `code` is stable
 * and meant for programs (`if (err.code === 'ERR_DELAY_INVALID_KEY')`); the
 * message is meant for people and may be reworded.
 */
export abstract class DelayError extends Error {
  abstract readonly code: string;

  protected constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
  }
}
