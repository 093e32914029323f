import { Injectable } from '@nestjs/common';
import { CATALOGUE_SEED } from './catalogue.seed';
import { Product } from './product';

/** In-memory products, seeded at startup. Returns copies so callers cannot change stock behind its back. */
@Injectable()
export class ProductsRepository {
  private readonly products = new Map<string, Product>(CATALOGUE_SEED.map((product) => [product.sku, { ...product }]));

  findAll(): Product[] {
    return Array.from(this.products.values(), (product) => ({ ...product }));
  }

  findBySku(sku: string): Product | undefined {
    const product = this.products.get(sku);
    return product && { ...product };
  }

  save(product: Product): void {
    this.products.set(product.sku, { ...product });
  }
}
