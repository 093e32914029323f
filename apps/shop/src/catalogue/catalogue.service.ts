import { Injectable, Logger } from '@nestjs/common';
import { NotFoundError } from '../common/errors/not-found.error';
import { InsufficientStockError } from './insufficient-stock.error';
import { Product } from './product';
import { ProductsRepository } from './products.repository';
import { StockLine } from './stock-line';

/**
 * Product look-ups and stock: taken when an order is placed, given back
 * when it is cancelled. Both run inside the caller's transaction (the
 * order's), so stock and order change together or not at all.
 */
@Injectable()
export class CatalogueService {
  private readonly logger = new Logger(CatalogueService.name);

  constructor(private readonly products: ProductsRepository) {}

  list(): Promise<Product[]> {
    return this.products.findAll();
  }

  async get(sku: string): Promise<Product> {
    const product = await this.products.findBySku(sku);
    if (!product) throw new NotFoundError('Product', sku);
    return product;
  }

  /**
   * Takes stock for every line or for none: the products are locked and
   * every line checked (lines of the same product add up) before any is
   * taken. Returns each line's product as it was before. Call it inside a
   * transaction: the locks and the change end with it.
   */
  async reserve(lines: readonly StockLine[]): Promise<Product[]> {
    const wanted = new Map<string, number>();
    for (const line of lines) wanted.set(line.sku, (wanted.get(line.sku) ?? 0) + line.quantity);
    const locked = await this.products.lockBySkus([...wanted.keys()]);
    const products = lines.map((line) => {
      const product = locked.get(line.sku);
      if (!product) throw new NotFoundError('Product', line.sku);
      return product;
    });
    for (const [sku, quantity] of wanted) {
      const stock = (locked.get(sku) as Product).stock;
      if (stock < quantity) throw new InsufficientStockError(sku, quantity, stock);
    }
    for (const sku of [...wanted.keys()].sort()) await this.products.addStock(sku, -(wanted.get(sku) as number));
    return products;
  }

  /** Gives the lines' stock back, inside the caller's transaction. */
  async release(lines: readonly StockLine[]): Promise<void> {
    const returned = new Map<string, number>();
    for (const line of lines) returned.set(line.sku, (returned.get(line.sku) ?? 0) + line.quantity);
    for (const sku of [...returned.keys()].sort()) {
      // A foreign key ties every order line to its product, so this only logs if that rule was dropped.
      if (!(await this.products.addStock(sku, returned.get(sku) as number))) this.logger.warn(`Cannot restore ${returned.get(sku)} of "${sku}": no such product`);
    }
  }
}
