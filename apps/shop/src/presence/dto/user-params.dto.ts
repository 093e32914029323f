import { Matches } from 'class-validator';
import { USER_ID_MESSAGE, USER_ID_PATTERN } from '../../common/user-id';

export class UserParams {
  @Matches(USER_ID_PATTERN, { message: `userId ${USER_ID_MESSAGE}` })
  readonly userId!: string;
}
