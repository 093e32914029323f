import { Transactional } from '@nestjs-cls/transactional';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DelayClock, DelayService } from 'nestjs-delay';
import { CatalogueService } from '../catalogue/catalogue.service';
import { StockLine } from '../catalogue/stock-line';
import { NotFoundError } from '../common/errors/not-found.error';
import { LoyaltyLedgerRepository } from '../loyalty/loyalty-ledger.repository';
import { shopConfig } from '../config/shop.config';
import { ShopConfig } from '../config/shop-config.interface';
import { Order, OrderLine, OrderStatus } from './order';
import { OrderEventType } from './order-event';
import { OrderEventBus } from './order-event.bus';
import { assertCanMove } from './order-lifecycle';
import { ORDER_AUTO_RATE, ORDER_UNPAID } from './order-topics';
import { OrderFilter, OrdersRepository } from './orders.repository';

export interface PlaceOrder {
  readonly buyerId: string;
  readonly lines: readonly StockLine[];
}

/**
 * The order lifecycle. Each change runs in one database transaction
 * (`@Transactional()`): the order's new state, the stock it takes or gives
 * back, the delayed action it arms or disarms and the merchants' webhook
 * events commit together or not at all. On the postgres delay driver the
 * action is a row written in that same transaction; on the wheel and Redis
 * drivers it is not, and a crash between the two can leave an action whose
 * order does not exist, which its handler ignores.
 *
 * The handlers lock the order and check its state before they act, so one
 * that runs late, or after the thing it was meant to prevent, does nothing.
 * On the postgres driver they run transactional (order-handlers.providers.ts):
 * what they write commits with the action's completion, so a run is never
 * repeated after its writes committed. On the wheel and Redis it can be (a
 * crash between the commit and the completion), and the status check is
 * then what makes the repeat do nothing.
 *
 * pay and rate disarm the action before they lock the order: a
 * transactional run holds its action's row from its first statement and
 * then locks the order, so taking the two in the same order means a payment
 * racing the run waits for it instead of deadlocking with it.
 */
@Injectable()
export class OrdersService {
  private readonly logger = new Logger(OrdersService.name);

  constructor(
    private readonly orders: OrdersRepository,
    private readonly catalogue: CatalogueService,
    private readonly loyalty: LoyaltyLedgerRepository,
    private readonly delay: DelayService,
    private readonly events: OrderEventBus,
    private readonly clock: DelayClock,
    @Inject(shopConfig.KEY) private readonly config: ShopConfig,
  ) {}

  async get(id: string): Promise<Order> {
    const order = await this.orders.findById(id);
    if (!order) throw new NotFoundError('Order', id);
    return order;
  }

  list(filter: OrderFilter): Promise<Order[]> {
    return this.orders.findAll(filter);
  }

  /** Takes the stock, saves the order and arms its `order.unpaid` action; a failure anywhere leaves no trace of it. */
  @Transactional()
  async place({ buyerId, lines }: PlaceOrder): Promise<Order> {
    const products = await this.catalogue.reserve(lines);
    const orderLines: OrderLine[] = lines.map((line, index) => ({
      sku: line.sku,
      name: products[index].name,
      merchantId: products[index].merchantId,
      quantity: line.quantity,
      unitPriceCents: products[index].priceCents,
    }));
    const created: Order = {
      id: randomUUID(),
      buyerId,
      lines: orderLines,
      totalCents: orderLines.reduce((sum, line) => sum + line.quantity * line.unitPriceCents, 0),
      status: 'created',
      createdAt: this.now(),
    };
    await this.orders.insert(created);
    const { dueAt } = await this.delay.schedule(ORDER_UNPAID, created.id, { delay: this.config.unpaidTimeoutMs });
    const order = await this.save({ ...created, paymentDueAt: dueAt.toISOString() });
    await this.publish('order.created', order);
    return order;
  }

  /** Marks the order paid and disarms its `order.unpaid` action, together. */
  @Transactional()
  async pay(id: string): Promise<Order> {
    await this.delay.cancel(ORDER_UNPAID, id);
    const order = await this.move(await this.locked(id), 'paid', { paidAt: this.now() });
    await this.publish('order.paid', order);
    return order;
  }

  @Transactional()
  async ship(id: string): Promise<Order> {
    const order = await this.move(await this.locked(id), 'shipped', { shippedAt: this.now() });
    await this.publish('order.shipped', order);
    return order;
  }

  /** Marks the order delivered and arms its `order.auto-rate` action, together. */
  @Transactional()
  async deliver(id: string): Promise<Order> {
    const delivered = await this.move(await this.locked(id), 'delivered', { deliveredAt: this.now() });
    const { dueAt } = await this.delay.schedule(ORDER_AUTO_RATE, id, { delay: this.config.autoRateAfterMs });
    const order = await this.save({ ...delivered, autoRateAt: dueAt.toISOString() });
    await this.publish('order.delivered', order);
    return order;
  }

  @Transactional()
  async rate(id: string, stars: number): Promise<Order> {
    await this.delay.cancel(ORDER_AUTO_RATE, id);
    const order = await this.move(await this.locked(id), 'rated', { rating: { stars, by: 'buyer', at: this.now() } });
    await this.publish('order.rated', order);
    return order;
  }

  /**
   * The `order.unpaid` action: cancels the order and gives its stock back,
   * in one transaction, if it is still unpaid. The order's row is locked
   * first, so a payment racing it either lands before (and this does
   * nothing) or waits and then finds the order cancelled.
   */
  @Transactional()
  async cancelIfUnpaid(id: string): Promise<void> {
    const order = await this.orders.findByIdForUpdate(id);
    if (order?.status !== 'created') {
      this.logger.debug(`Unpaid timeout of order "${id}" ignored: ${order ? order.status : 'no such order'}`);
      return;
    }
    const cancelled = await this.move(order, 'cancelled', { cancelledAt: this.now(), cancelReason: 'unpaid' });
    await this.catalogue.release(cancelled.lines);
    await this.publish('order.cancelled', cancelled);
    this.logger.log(`Order "${id}" cancelled: unpaid since ${order.createdAt}`);
  }

  /**
   * The `order.auto-rate` action: 5 stars for a delivered order its buyer
   * has not rated, and the buyer's loyalty credit for it (a ledger row: not
   * idempotent, written once per run that gets this far).
   */
  @Transactional()
  async rateIfUnrated(id: string): Promise<void> {
    const order = await this.orders.findByIdForUpdate(id);
    if (order?.status !== 'delivered') {
      this.logger.debug(`Auto-rating of order "${id}" ignored: ${order ? order.status : 'no such order'}`);
      return;
    }
    const at = this.now();
    const rated = await this.move(order, 'rated', { rating: { stars: 5, by: 'auto', at } });
    const points = loyaltyPoints(order.totalCents);
    await this.loyalty.credit({ buyerId: order.buyerId, orderId: id, points, reason: 'order.auto-rated', creditedAt: at });
    await this.publish('order.rated', rated);
    this.logger.log(`Order "${id}" rated 5 stars: not rated since delivery at ${order.deliveredAt ?? '?'}; ${points} loyalty point(s) credited to "${order.buyerId}"`);
  }

  /** The order, locked until the transaction ends. */
  private async locked(id: string): Promise<Order> {
    const order = await this.orders.findByIdForUpdate(id);
    if (!order) throw new NotFoundError('Order', id);
    return order;
  }

  private move(order: Order, to: OrderStatus, changes: Partial<Order>): Promise<Order> {
    assertCanMove(order, to);
    return this.save({ ...order, ...changes, status: to });
  }

  private async save(order: Order): Promise<Order> {
    await this.orders.update(order);
    return order;
  }

  /** Inside the change's transaction: the merchants' webhook events commit with it. */
  private async publish(type: OrderEventType, order: Order): Promise<void> {
    const merchantIds = [...new Set(order.lines.map((line) => line.merchantId))];
    await this.events.publish({ type, orderId: order.id, status: order.status, merchantIds, at: this.now() });
  }

  /** The delay clock's time, so that order timestamps agree with due times (and with a test's virtual clock). */
  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }
}

/** One point per whole 100 cents of the order, at least one. */
function loyaltyPoints(totalCents: number): number {
  return Math.max(1, Math.floor(totalCents / 100));
}
