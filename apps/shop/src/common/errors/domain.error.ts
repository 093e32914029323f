/**
 * Base of the errors the domain throws on purpose. The domain knows nothing
 * of HTTP; DomainExceptionFilter turns each kind into a status code.
 */
export abstract class DomainError extends Error {
  protected constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
