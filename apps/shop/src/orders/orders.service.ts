import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DelayClock, DelayService } from 'nestjs-delay';
import { CatalogueService } from '../catalogue/catalogue.service';
import { StockLine } from '../catalogue/stock-line';
import { NotFoundError } from '../common/errors/not-found.error';
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
 * The order lifecycle. Every change saves the new state before it arms or
 * disarms a delayed action, so a timer that fires in between finds the new
 * state and does nothing: the handlers below are safe to run late, twice,
 * or after the action they were meant to prevent.
 */
@Injectable()
export class OrdersService {
  private readonly logger = new Logger(OrdersService.name);

  constructor(
    private readonly orders: OrdersRepository,
    private readonly catalogue: CatalogueService,
    private readonly delay: DelayService,
    private readonly events: OrderEventBus,
    private readonly clock: DelayClock,
    @Inject(shopConfig.KEY) private readonly config: ShopConfig,
  ) {}

  get(id: string): Order {
    const order = this.orders.findById(id);
    if (!order) throw new NotFoundError('Order', id);
    return order;
  }

  list(filter: OrderFilter): Order[] {
    return this.orders.findAll(filter);
  }

  async place({ buyerId, lines }: PlaceOrder): Promise<Order> {
    const products = this.catalogue.reserve(lines);
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
    this.orders.save(created);
    let paymentDueAt: Date;
    try {
      ({ dueAt: paymentDueAt } = await this.delay.schedule(ORDER_UNPAID, created.id, { delay: this.config.unpaidTimeoutMs }));
    } catch (error) {
      // An order nobody would ever cancel holds its stock forever: refuse it instead.
      this.orders.delete(created.id);
      this.catalogue.release(lines);
      throw error;
    }
    const order = this.save({ ...created, paymentDueAt: paymentDueAt.toISOString() });
    await this.publish('order.created', order);
    return order;
  }

  async pay(id: string): Promise<Order> {
    const order = this.move(this.get(id), 'paid', { paidAt: this.now() });
    await this.delay.cancel(ORDER_UNPAID, id);
    await this.publish('order.paid', order);
    return order;
  }

  async ship(id: string): Promise<Order> {
    const order = this.move(this.get(id), 'shipped', { shippedAt: this.now() });
    await this.publish('order.shipped', order);
    return order;
  }

  async deliver(id: string): Promise<Order> {
    const delivered = this.move(this.get(id), 'delivered', { deliveredAt: this.now() });
    const { dueAt } = await this.delay.schedule(ORDER_AUTO_RATE, id, { delay: this.config.autoRateAfterMs });
    const order = this.save({ ...delivered, autoRateAt: dueAt.toISOString() });
    await this.publish('order.delivered', order);
    return order;
  }

  async rate(id: string, stars: number): Promise<Order> {
    const order = this.move(this.get(id), 'rated', { rating: { stars, by: 'buyer', at: this.now() } });
    await this.delay.cancel(ORDER_AUTO_RATE, id);
    await this.publish('order.rated', order);
    return order;
  }

  /** The `order.unpaid` action: cancels the order and gives its stock back, if it is still unpaid. */
  async cancelIfUnpaid(id: string): Promise<void> {
    const order = this.orders.findById(id);
    if (order?.status !== 'created') {
      this.logger.debug(`Unpaid timeout of order "${id}" ignored: ${order ? order.status : 'no such order'}`);
      return;
    }
    const cancelled = this.move(order, 'cancelled', { cancelledAt: this.now(), cancelReason: 'unpaid' });
    this.catalogue.release(cancelled.lines);
    this.logger.log(`Order "${id}" cancelled: unpaid since ${order.createdAt}`);
    await this.publish('order.cancelled', cancelled);
  }

  /** The `order.auto-rate` action: 5 stars for a delivered order its buyer has not rated. */
  async rateIfUnrated(id: string): Promise<void> {
    const order = this.orders.findById(id);
    if (order?.status !== 'delivered') {
      this.logger.debug(`Auto-rating of order "${id}" ignored: ${order ? order.status : 'no such order'}`);
      return;
    }
    const rated = this.move(order, 'rated', { rating: { stars: 5, by: 'auto', at: this.now() } });
    this.logger.log(`Order "${id}" rated 5 stars: not rated since delivery at ${order.deliveredAt ?? '?'}`);
    await this.publish('order.rated', rated);
  }

  private move(order: Order, to: OrderStatus, changes: Partial<Order>): Order {
    assertCanMove(order, to);
    return this.save({ ...order, ...changes, status: to });
  }

  private save(order: Order): Order {
    this.orders.save(order);
    return order;
  }

  private async publish(type: OrderEventType, order: Order): Promise<void> {
    const merchantIds = [...new Set(order.lines.map((line) => line.merchantId))];
    await this.events.publish({ type, orderId: order.id, status: order.status, merchantIds, at: this.now() });
  }

  /** The delay clock's time, so that order timestamps agree with due times (and with a test's virtual clock). */
  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }
}
