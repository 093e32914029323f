import { registerAs } from '@nestjs/config';
import { parseShopEnv } from './parse-shop-env';

/**
 * The typed `shop` namespace; inject it with `@Inject(shopConfig.KEY)`. The
 * environment is read when the provider is built, not when this file is
 * imported, so each application instance (and each test) sees the variables
 * as they are at its own startup.
 */
export const shopConfig = registerAs('shop', () => parseShopEnv(process.env));
