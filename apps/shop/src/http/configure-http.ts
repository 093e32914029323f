import { NestExpressApplication } from '@nestjs/platform-express';
import { refuseDeepJson } from './json-depth-check';

/** The largest JSON body the shop reads; an order of a thousand lines fits. */
export const JSON_BODY_LIMIT = '100kb';

/**
 * The shop's HTTP settings that live on the application rather than in a
 * module: main.ts and the end-to-end tests both call this before listening.
 * No `X-Powered-By` (it tells a scanner what to try), and a JSON parser that
 * refuses a body over JSON_BODY_LIMIT (413) or nested too deep (400) before
 * anything reads it. Registered before Nest's own parsers, which then stay out.
 */
export function configureHttp(app: NestExpressApplication): void {
  app.disable('x-powered-by');
  app.useBodyParser('json', { limit: JSON_BODY_LIMIT, verify: refuseDeepJson });
}
