import { IsISO8601, IsString, MaxLength } from 'class-validator';

export class ReceivedEventDto {
  @IsString()
  @MaxLength(100)
  readonly id!: string;

  @IsString()
  @MaxLength(100)
  readonly type!: string;

  @IsString()
  @MaxLength(100)
  readonly orderId!: string;

  @IsString()
  @MaxLength(100)
  readonly status!: string;

  @IsISO8601()
  readonly at!: string;
}
