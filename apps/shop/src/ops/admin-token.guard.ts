import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { sameSecret } from '../common/secrets';
import { ShopConfig } from '../config/shop-config.interface';

interface GuardedRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** What the browser shows when it asks for the password. */
const CHALLENGE = 'Basic realm="shop delay admin", charset="UTF-8"';

/**
 * The admin page's guard: the page shows every pending action's payload
 * (buyers' orders, merchants' events), so reading it needs the same HTTP
 * Basic credentials as writing: the password is ADMIN_TOKEN (any user
 * name). Without ADMIN_TOKEN the page is closed.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly token: string | undefined;

  constructor(config: ConfigService<{ shop: ShopConfig }, true>) {
    this.token = config.get('shop', { infer: true }).adminToken;
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    if (this.token === undefined) throw new ForbiddenException('The admin page is closed: start the shop with ADMIN_TOKEN set to open it.');
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
