import { IsUUID } from 'class-validator';

export class OrderParams {
  @IsUUID('4', { message: 'order id must be a UUID, as returned by POST /orders' })
  readonly id!: string;
}
