import { Controller, Get, Param } from '@nestjs/common';
import { CatalogueService } from './catalogue.service';
import { SkuParams } from './dto/sku-params.dto';
import { Product } from './product';

@Controller('products')
export class ProductsController {
  constructor(private readonly catalogue: CatalogueService) {}

  @Get()
  list(): Promise<Product[]> {
    return this.catalogue.list();
  }

  @Get(':sku')
  get(@Param() { sku }: SkuParams): Promise<Product> {
    return this.catalogue.get(sku);
  }
}
