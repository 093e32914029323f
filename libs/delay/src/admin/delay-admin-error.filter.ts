import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Inject, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { DelayError } from '../errors/delay.error';
import { DriverUnavailableError } from '../errors/driver-unavailable.error';
import { UnsupportedOperationError } from '../errors/unsupported-operation.error';
import { ADMIN_HEADERS } from './admin-headers';
import { errorPage } from './admin-pages';
import { AdminRequest, mountBase } from './admin-request';
import { DELAY_ADMIN_OPTIONS } from './delay-admin.constants';
import { ResolvedDelayAdminOptions } from './delay-admin-options.interface';

/**
 * Answers every failure of the admin page with an HTML page a person can
 * read: a guard's refusal keeps its status (401, 403), bad input from the
 * page is 400, an unreachable store 503, what a custom driver cannot do 501, and anything else 500 with its
 * details in the log only.
 */
@Catch()
export class DelayAdminErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger(DelayAdminErrorFilter.name);

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(DELAY_ADMIN_OPTIONS) private readonly options: ResolvedDelayAdminOptions,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<AdminRequest>();
    const response: unknown = http.getResponse();
    const { status, message, headers } = this.describe(exception);
    const adapter = this.adapterHost.httpAdapter;
    const page = errorPage({ base: mountBase(request, this.options.path), options: this.options, now: Date.now() }, status, message);
    // The same policy as every page: the error page shows text from the request (a topic, a message).
    for (const [name, value] of Object.entries(ADMIN_HEADERS)) adapter.setHeader(response, name, value);
    for (const [name, value] of Object.entries(headers)) adapter.setHeader(response, name, value);
    adapter.reply(response, page, status);
  }

  private describe(exception: unknown): { status: number; message: string; headers: Record<string, string> } {
    if (exception instanceof HttpException) {
      const body = exception.getResponse();
      const message = typeof body === 'string' ? body : messageOf(body) ?? exception.message;
      // A guard that asks for credentials (Basic auth) keeps its challenge, so the browser can prompt.
      const challenge = typeof body === 'object' && body !== null ? (body as { authenticate?: unknown }).authenticate : undefined;
      return { status: exception.getStatus(), message, headers: typeof challenge === 'string' ? { 'WWW-Authenticate': challenge } : {} };
    }
    if (exception instanceof DriverUnavailableError) return { status: HttpStatus.SERVICE_UNAVAILABLE, message: exception.message, headers: {} };
    if (exception instanceof UnsupportedOperationError) return { status: HttpStatus.NOT_IMPLEMENTED, message: exception.message, headers: {} };
    if (exception instanceof DelayError) return { status: HttpStatus.BAD_REQUEST, message: exception.message, headers: {} };
    this.logger.error('Admin page failed', exception instanceof Error ? exception.stack : String(exception));
    return { status: HttpStatus.INTERNAL_SERVER_ERROR, message: 'The page failed; the details are in the server log.', headers: {} };
  }
}

function messageOf(body: object): string | undefined {
  const message = (body as { message?: unknown }).message;
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  return undefined;
}
