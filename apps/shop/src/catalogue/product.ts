export interface Product {
  readonly sku: string;
  readonly name: string;
  /** Who sells it, and so who hears about orders that contain it. */
  readonly merchantId: string;
  /** Whole cents, so totals never meet floating-point rounding. */
  readonly priceCents: number;
  readonly stock: number;
}
