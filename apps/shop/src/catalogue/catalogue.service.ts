import { Injectable, Logger } from '@nestjs/common';
import { NotFoundError } from '../common/errors/not-found.error';
import { InsufficientStockError } from './insufficient-stock.error';
import { Product } from './product';
import { ProductsRepository } from './products.repository';
import { StockLine } from './stock-line';

/** Product look-ups and stock: taken when an order is placed, given back when it is cancelled. */
@Injectable()
export class CatalogueService {
  private readonly logger = new Logger(CatalogueService.name);

  constructor(private readonly products: ProductsRepository) {}

  list(): Product[] {
    return this.products.findAll();
  }

  get(sku: string): Product {
    const product = this.products.findBySku(sku);
    if (!product) throw new NotFoundError('Product', sku);
    return product;
  }

  /**
   * Takes stock for every line or for none: all lines are checked before
   * any is taken, so a refused order leaves the catalogue untouched.
   */
  reserve(lines: readonly StockLine[]): Product[] {
    const products = lines.map((line) => this.get(line.sku));
    lines.forEach((line, index) => {
      if (products[index].stock < line.quantity) throw new InsufficientStockError(line.sku, line.quantity, products[index].stock);
    });
    lines.forEach((line, index) => this.products.save({ ...products[index], stock: products[index].stock - line.quantity }));
    return products;
  }

  release(lines: readonly StockLine[]): void {
    for (const line of lines) {
      const product = this.products.findBySku(line.sku);
      if (!product) {
        // Only possible if the catalogue lost a product that an order still holds.
        this.logger.warn(`Cannot restore ${line.quantity} of "${line.sku}": no such product`);
        continue;
      }
      this.products.save({ ...product, stock: product.stock + line.quantity });
    }
  }
}
