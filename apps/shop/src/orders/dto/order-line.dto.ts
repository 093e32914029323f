import { IsInt, Matches, Max, Min } from 'class-validator';
import { SKU_PATTERN } from '../../catalogue/dto/sku-params.dto';

export class OrderLineDto {
  @Matches(SKU_PATTERN, { message: 'sku must be lowercase letters, digits and dashes, e.g. "green-tea"' })
  readonly sku!: string;

  @IsInt()
  @Min(1)
  @Max(100)
  readonly quantity!: number;
}
