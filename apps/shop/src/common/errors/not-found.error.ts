import { DomainError } from './domain.error';

/** Something the request names does not exist. */
export class NotFoundError extends DomainError {
  constructor(
    readonly entity: string,
    readonly id: string,
  ) {
    super(`${entity} "${id}" not found`);
  }
}
