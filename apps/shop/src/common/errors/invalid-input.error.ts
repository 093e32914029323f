import { DomainError } from './domain.error';

/** The request is well formed but names something the shop refuses to use, e.g. a webhook URL inside its own network. */
export class InvalidInputError extends DomainError {
  constructor(message: string) {
    super(message);
  }
}
