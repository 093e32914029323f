import { ArgumentsHost, BadRequestException, Catch, HttpException, NotImplementedException, ServiceUnavailableException } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { DelayError, DriverUnavailableError, UnsupportedOperationError } from 'nestjs-delay';

/**
 * Answers the delay library's errors on the JSON API (an invalid topic or
 * key, say) with a status and the error's `code`, instead of a 500 and a
 * stack trace in the log: the store unreachable is 503, what the driver
 * cannot do is 501, anything else is bad input, 400. The admin page has its
 * own filter, which answers with HTML.
 */
@Catch(DelayError)
export class DelayErrorFilter extends BaseExceptionFilter {
  override catch(error: DelayError, host: ArgumentsHost): void {
    super.catch(toHttpException(error), host);
  }
}

function toHttpException(error: DelayError): HttpException {
  const body = (statusCode: number, name: string): object => ({ statusCode, error: name, message: error.message, code: error.code });
  if (error instanceof DriverUnavailableError) return new ServiceUnavailableException(body(503, 'Service Unavailable'));
  if (error instanceof UnsupportedOperationError) return new NotImplementedException(body(501, 'Not Implemented'));
  return new BadRequestException(body(400, 'Bad Request'));
}
