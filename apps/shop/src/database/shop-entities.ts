import { ProductEntity } from '../catalogue/product.entity';
import { MerchantTokenEntity } from '../merchants/merchant-token.entity';
import { MerchantEntity } from '../merchants/merchant.entity';
import { WebhookDeliveryEntity } from '../merchants/webhook-delivery.entity';
import { WebhookSubscriptionEntity } from '../merchants/webhook-subscription.entity';
import { OrderLineEntity } from '../orders/order-line.entity';
import { OrderEntity } from '../orders/order.entity';
import { UserPresenceEntity } from '../presence/user-presence.entity';
import { ReceivedBatchEntity } from '../receiver/received-batch.entity';
import { CreateShopSchema1764130000000 } from './migrations/1764130000000-create-shop-schema';
import { AddMerchantDigests1795650000000 } from './migrations/1795650000000-add-merchant-digests';
import { AddLoyaltyLedger1796200000000 } from './migrations/1796200000000-add-loyalty-ledger';

export const SHOP_ENTITIES = [
  MerchantEntity,
  ProductEntity,
  OrderEntity,
  OrderLineEntity,
  UserPresenceEntity,
  MerchantTokenEntity,
  WebhookSubscriptionEntity,
  WebhookDeliveryEntity,
  ReceivedBatchEntity,
];

/** In the order they run; TypeORM records each in its `migrations` table and runs only the new ones at startup. */
export const SHOP_MIGRATIONS = [CreateShopSchema1764130000000, AddMerchantDigests1795650000000, AddLoyaltyLedger1796200000000];
