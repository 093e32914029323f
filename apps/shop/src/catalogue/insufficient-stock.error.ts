import { ConflictError } from '../common/errors/conflict.error';

export class InsufficientStockError extends ConflictError {
  constructor(
    readonly sku: string,
    readonly requested: number,
    readonly available: number,
  ) {
    super(`Not enough stock of "${sku}": ${requested} requested, ${available} available`);
  }
}
