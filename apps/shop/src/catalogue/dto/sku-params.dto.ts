import { Matches } from 'class-validator';

export const SKU_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;

export class SkuParams {
  @Matches(SKU_PATTERN, { message: 'sku must be lowercase letters, digits and dashes, at most 64 characters' })
  readonly sku!: string;
}
