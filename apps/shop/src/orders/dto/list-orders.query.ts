import { IsIn, IsOptional, Matches } from 'class-validator';
import { USER_ID_MESSAGE, USER_ID_PATTERN } from '../../common/user-id';
import { ORDER_STATUSES, OrderStatus } from '../order';

export class ListOrdersQuery {
  @IsOptional()
  @Matches(USER_ID_PATTERN, { message: `buyerId ${USER_ID_MESSAGE}` })
  readonly buyerId?: string;

  @IsOptional()
  @IsIn(ORDER_STATUSES)
  readonly status?: OrderStatus;
}
