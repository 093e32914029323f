import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { sameSecret } from '../common/secrets';
import { ShopConfig } from '../config/shop-config.interface';

interface GuardedRequest {
  readonly method: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** What the browser shows when it asks for the password. */
const CHALLENGE = 'Basic realm="shop delay admin", charset="UTF-8"';

/**
 * The admin page's guard: anyone may look (the shop is a demo), and a write
 * needs HTTP Basic credentials whose password is ADMIN_TOKEN (any user
 * name). Without ADMIN_TOKEN every write is refused.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly token: string | undefined;

  constructor(config: ConfigService<{ shop: ShopConfig }, true>) {
    this.token = config.get('shop', { infer: true }).adminToken;
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    if (request.method === 'GET' || request.method === 'HEAD') return true;
    if (this.token === undefined) throw new ForbiddenException('The admin page is read-only: start the shop with ADMIN_TOKEN set to allow changes.');
    const password = basicPassword(request.headers.authorization);
    // No credentials: ask for them (the browser shows its password prompt and posts the form again).
    if (password === undefined) throw new UnauthorizedException({ message: 'Sign in with the ADMIN_TOKEN as password.', authenticate: CHALLENGE });
    if (!sameSecret(password, this.token)) throw new ForbiddenException('Wrong admin password.');
    return true;
  }
}

function basicPassword(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(value);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}
