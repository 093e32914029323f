import { ArgumentsHost, Catch, InternalServerErrorException, Logger } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { QueryFailedError } from 'typeorm';

/** SQLSTATE class 22 (data exception): PostgreSQL's message quotes the value it could not take, e.g. `invalid input syntax for type integer: "..."`. */
const DATA_EXCEPTION = /^22/;

/**
 * A statement of the shop that failed and that nothing else answered: one
 * log line with PostgreSQL's message, its SQLSTATE and the table,
 * constraint or column it names, and a plain 500 to the client. Never the
 * statement's parameters (order lines, names, webhook addresses), nor the
 * error's detail (`Key (id)=(...)`), nor a value PostgreSQL quotes in a
 * data exception's message: Nest's own handler logged the whole error,
 * parameters included.
 */
@Catch(QueryFailedError)
export class QueryFailedFilter extends BaseExceptionFilter {
  private readonly logger = new Logger(QueryFailedFilter.name);

  override catch(error: QueryFailedError, host: ArgumentsHost): void {
    this.logger.error(describeFailure(error));
    // The body Nest answers any unexpected error with.
    super.catch(new InternalServerErrorException({ statusCode: 500, message: 'Internal server error' }), host);
  }
}

/** What may be logged of a failed statement. */
export function describeFailure(error: QueryFailedError): string {
  const fields = error.driverError as Partial<Record<'code' | 'table' | 'constraint' | 'column', unknown>> | undefined;
  const text = (name: 'code' | 'table' | 'constraint' | 'column'): string | undefined => {
    const value = fields?.[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const sqlstate = text('code') ?? 'unknown';
  // The message up to the value it quotes, for a data exception.
  const message = DATA_EXCEPTION.test(sqlstate) ? error.message.replace(/:\s.*$/s, ': (value not logged)') : error.message.split('\n')[0];
  const names = (['table', 'constraint', 'column'] as const).flatMap((name) => (text(name) === undefined ? [] : [`${name} ${text(name)}`]));
  return `A statement failed: ${message} (SQLSTATE ${sqlstate}${names.length > 0 ? `, ${names.join(', ')}` : ''})`;
}
