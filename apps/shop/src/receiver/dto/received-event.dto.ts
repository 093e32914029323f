import { Type } from 'class-transformer';
import { IsISO8601, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { ReceivedDigestDto } from './received-digest.dto';

/** An order event (orderId and status) or a daily digest (type "merchant.digest", digest). */
export class ReceivedEventDto {
  @IsString()
  @MaxLength(100)
  readonly id!: string;

  @IsString()
  @MaxLength(100)
  readonly type!: string;

  @ValidateIf((event: ReceivedEventDto) => event.type !== 'merchant.digest')
  @IsString()
  @MaxLength(100)
  readonly orderId?: string;

  @ValidateIf((event: ReceivedEventDto) => event.type !== 'merchant.digest')
  @IsString()
  @MaxLength(100)
  readonly status?: string;

  @ValidateIf((event: ReceivedEventDto) => event.type === 'merchant.digest')
  @ValidateNested()
  @Type(() => ReceivedDigestDto)
  readonly digest?: ReceivedDigestDto;

  @IsISO8601()
  readonly at!: string;
}
