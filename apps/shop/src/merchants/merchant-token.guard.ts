import { CanActivate, ExecutionContext, ForbiddenException, Injectable, UnauthorizedException } from '@nestjs/common';
import { bearerToken, sameSecret } from '../common/secrets';
import { NotFoundError } from '../common/errors/not-found.error';
import { MerchantTokensRepository } from './merchant-tokens.repository';
import { MerchantsRepository } from './merchants.repository';

interface GuardedRequest {
  readonly params: Readonly<Record<string, string | undefined>>;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

interface ChallengedResponse {
  setHeader(name: string, value: string): unknown;
}

/**
 * Lets a request at /merchants/:merchantId/webhook... through only with
 * that merchant's token as `Authorization: Bearer <token>`: the token an
 * admin issued with POST /api/admin/merchants/:merchantId/token. Another
 * merchant's token, an old one and none at all are refused; a merchant with
 * no token issued yet has no access until an admin issues one.
 */
@Injectable()
export class MerchantTokenGuard implements CanActivate {
  constructor(
    private readonly merchants: MerchantsRepository,
    private readonly tokens: MerchantTokensRepository,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    const merchantId = request.params.merchantId ?? '';
    if (!(await this.merchants.findById(merchantId))) throw new NotFoundError('Merchant', merchantId);
    const given = bearerToken(request.headers.authorization);
    if (given === undefined) {
      context.switchToHttp().getResponse<ChallengedResponse>().setHeader('WWW-Authenticate', 'Bearer realm="shop merchants"');
      throw new UnauthorizedException(`Send merchant "${merchantId}"'s token as "Authorization: Bearer <token>"; an admin issues it with POST /api/admin/merchants/${merchantId}/token.`);
    }
    const digest = await this.tokens.findDigest(merchantId);
    if (digest === undefined || !sameSecret(given, digest)) throw new ForbiddenException(`This token does not authorise merchant "${merchantId}".`);
    return true;
  }
}
