/** A quantity of one product, as stock is taken and given back. */
export interface StockLine {
  readonly sku: string;
  readonly quantity: number;
}
