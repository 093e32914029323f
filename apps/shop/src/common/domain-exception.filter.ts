import { ArgumentsHost, BadRequestException, Catch, ConflictException, HttpException, NotFoundException } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { ConflictError } from './errors/conflict.error';
import { DomainError } from './errors/domain.error';
import { InvalidInputError } from './errors/invalid-input.error';
import { NotFoundError } from './errors/not-found.error';

/**
 * Maps domain errors to Nest's own HttpExceptions and lets Nest's base
 * filter write them, so these responses look exactly like the 400s of the
 * ValidationPipe: `{ statusCode, message, error }`.
 */
@Catch(DomainError)
export class DomainExceptionFilter extends BaseExceptionFilter {
  override catch(error: DomainError, host: ArgumentsHost): void {
    // A DomainError kind without a mapping is a bug here: passed on as it is, Nest logs it and answers 500.
    super.catch(toHttpException(error) ?? error, host);
  }
}

function toHttpException(error: DomainError): HttpException | undefined {
  if (error instanceof NotFoundError) return new NotFoundException(error.message);
  if (error instanceof ConflictError) return new ConflictException(error.message);
  if (error instanceof InvalidInputError) return new BadRequestException(error.message);
  return undefined;
}
