import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, Matches, ValidateNested } from 'class-validator';
import { USER_ID_MESSAGE, USER_ID_PATTERN } from '../../common/user-id';
import { OrderLineDto } from './order-line.dto';

/** The total is not part of the request: the shop computes it from its own prices. */
export class CreateOrderDto {
  @Matches(USER_ID_PATTERN, { message: `buyerId ${USER_ID_MESSAGE}` })
  readonly buyerId!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @ArrayUnique((line: OrderLineDto) => line.sku, { message: 'lines must not repeat a sku; raise its quantity instead' })
  @ValidateNested({ each: true })
  @Type(() => OrderLineDto)
  readonly lines!: OrderLineDto[];
}
