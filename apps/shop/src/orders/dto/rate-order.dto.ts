import { IsInt, Max, Min } from 'class-validator';

export class RateOrderDto {
  @IsInt()
  @Min(1)
  @Max(5)
  readonly stars!: number;
}
