import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { Product } from './product';
import { ProductEntity } from './product.entity';

/** Products and their stock, in the `products` table. */
@Injectable()
export class ProductsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get manager(): EntityManager {
    // The transaction's manager inside a @Transactional() method, the data source's own outside one.
    return this.txHost.tx;
  }

  async findAll(): Promise<Product[]> {
    return (await this.manager.find(ProductEntity, { order: { sku: 'ASC' } })).map(toProduct);
  }

  async findBySku(sku: string): Promise<Product | undefined> {
    const row = await this.manager.findOneBy(ProductEntity, { sku });
    return row ? toProduct(row) : undefined;
  }

  /**
   * The products named, locked until the transaction ends (FOR UPDATE), in
   * sku order: two checkouts of the same products lock them in the same
   * order and so never deadlock.
   */
  async lockBySkus(skus: readonly string[]): Promise<Map<string, Product>> {
    const rows = await this.manager.find(ProductEntity, { where: { sku: In([...skus]) }, order: { sku: 'ASC' }, lock: { mode: 'pessimistic_write' } });
    return new Map(rows.map((row) => [row.sku, toProduct(row)]));
  }

  /** Adds `delta` (negative to take) to the stock; the CHECK (stock >= 0) refuses a stock below zero. */
  async addStock(sku: string, delta: number): Promise<boolean> {
    const result = await this.manager.increment(ProductEntity, { sku }, 'stock', delta);
    return (result.affected ?? 0) > 0;
  }
}

function toProduct(row: ProductEntity): Product {
  return { sku: row.sku, name: row.name, merchantId: row.merchantId, priceCents: row.priceCents, stock: row.stock };
}
