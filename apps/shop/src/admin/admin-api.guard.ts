import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { bearerToken, sameSecret } from '../common/secrets';
import { ShopConfig } from '../config/shop-config.interface';

interface GuardedRequest {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

interface ChallengedResponse {
  setHeader(name: string, value: string): unknown;
}

/**
 * The JSON admin's guard: every route, reads included (they show every
 * payload), needs `Authorization: Bearer <ADMIN_TOKEN>`. Only a bearer
 * token: a browser sends saved Basic credentials and cookies with a request
 * another site makes it send, but never an Authorization header it was not
 * told to add, and a page elsewhere cannot add one without a CORS preflight
 * the shop does not answer. Without ADMIN_TOKEN the JSON admin is closed.
 */
@Injectable()
export class AdminApiGuard implements CanActivate {
  private readonly token: string | undefined;

  constructor(config: ConfigService<{ shop: ShopConfig }, true>) {
    this.token = config.get('shop', { infer: true }).adminToken;
  }

  canActivate(context: ExecutionContext): boolean {
    if (this.token === undefined) throw new ForbiddenException('The admin API is closed: start the shop with ADMIN_TOKEN set and send it as "Authorization: Bearer <ADMIN_TOKEN>".');
    const given = bearerToken(context.switchToHttp().getRequest<GuardedRequest>().headers.authorization);
    if (given === undefined) {
      context.switchToHttp().getResponse<ChallengedResponse>().setHeader('WWW-Authenticate', 'Bearer realm="shop admin API"');
      throw new UnauthorizedException('Send the ADMIN_TOKEN as "Authorization: Bearer <ADMIN_TOKEN>".');
    }
    if (!sameSecret(given, this.token)) throw new ForbiddenException('Wrong admin token.');
    return true;
  }
}
