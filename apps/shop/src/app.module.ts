import { Module } from '@nestjs/common';
import { DelayModule } from 'nestjs-delay';

@Module({
  imports: [DelayModule.forRoot({})],
})
export class AppModule {}
