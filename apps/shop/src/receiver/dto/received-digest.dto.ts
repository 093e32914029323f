import { IsInt, IsISO8601, IsString, Matches, MaxLength, Min } from 'class-validator';

/** A daily digest as the shop's webhooks send it (event type "merchant.digest"). */
export class ReceivedDigestDto {
  @IsString()
  @MaxLength(100)
  readonly merchantId!: string;

  @Matches(/^\d{4}-\d{2}-\d{2}$/)
  readonly localDate!: string;

  @IsString()
  @MaxLength(64)
  readonly timeZone!: string;

  @IsISO8601()
  readonly from!: string;

  @IsISO8601()
  readonly to!: string;

  @IsInt()
  @Min(0)
  readonly ordersCount!: number;

  @IsInt()
  @Min(0)
  readonly revenueCents!: number;

  @IsISO8601()
  readonly scheduledAt!: string;

  @IsISO8601()
  readonly builtAt!: string;
}
