import { DomainError } from './domain.error';

/** The request is well formed but the current state forbids it. */
export class ConflictError extends DomainError {
  constructor(message: string) {
    super(message);
  }
}
