import { Matches } from 'class-validator';
import { USER_ID_MESSAGE, USER_ID_PATTERN } from '../../common/user-id';

export class BuyerParams {
  @Matches(USER_ID_PATTERN, { message: `buyerId ${USER_ID_MESSAGE}` })
  readonly buyerId!: string;
}
