import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { EntityManager, FindOptionsWhere } from 'typeorm';
import { Order, OrderStatus } from './order';
import { OrderLineEntity } from './order-line.entity';
import { toOrder, toOrderLineRows, toOrderRow } from './order-rows';
import { OrderEntity } from './order.entity';

export interface OrderFilter {
  readonly buyerId?: string;
  readonly status?: OrderStatus;
}

/**
 * Orders in `orders` and `order_lines`. Orders are immutable values: a
 * change is an update with a new one. Inside a `@Transactional()` method
 * every call runs in that transaction.
 */
@Injectable()
export class OrdersRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get manager(): EntityManager {
    return this.txHost.tx;
  }

  async findById(id: string): Promise<Order | undefined> {
    const row = await this.manager.findOne(OrderEntity, { where: { id }, relations: { lines: true } });
    return row ? toOrder(row, row.lines) : undefined;
  }

  /**
   * The order, its row locked until the transaction ends (FOR UPDATE): a
   * payment and the unpaid timeout that race for one order take turns, and
   * the second sees what the first did.
   */
  async findByIdForUpdate(id: string): Promise<Order | undefined> {
    // Locked alone: FOR UPDATE cannot apply to the outer join that loading the lines with it would take.
    const row = await this.manager.findOne(OrderEntity, { where: { id }, lock: { mode: 'pessimistic_write' } });
    if (!row) return undefined;
    return toOrder(row, await this.manager.find(OrderLineEntity, { where: { orderId: id } }));
  }

  /** Oldest first. */
  async findAll(filter: OrderFilter = {}): Promise<Order[]> {
    const where: FindOptionsWhere<OrderEntity> = {};
    if (filter.buyerId !== undefined) where.buyerId = filter.buyerId;
    if (filter.status !== undefined) where.status = filter.status;
    const rows = await this.manager.find(OrderEntity, { where, relations: { lines: true }, order: { seq: 'ASC' } });
    return rows.map((row) => toOrder(row, row.lines));
  }

  async insert(order: Order): Promise<void> {
    await this.manager.insert(OrderEntity, toOrderRow(order));
    await this.manager.insert(OrderLineEntity, toOrderLineRows(order));
  }

  /** Writes the order's new state; its lines never change. */
  async update(order: Order): Promise<void> {
    const { id, ...columns } = toOrderRow(order);
    await this.manager.update(OrderEntity, { id }, columns);
  }
}
