import { Module } from '@nestjs/common';
import { CatalogueService } from './catalogue.service';
import { ProductsController } from './products.controller';
import { ProductsRepository } from './products.repository';

@Module({
  controllers: [ProductsController],
  providers: [ProductsRepository, CatalogueService],
  exports: [CatalogueService],
})
export class CatalogueModule {}
