import { Body, Controller, Get, HttpCode, HttpStatus, Param, Post, Query } from '@nestjs/common';
import { CreateOrderDto } from './dto/create-order.dto';
import { ListOrdersQuery } from './dto/list-orders.query';
import { OrderParams } from './dto/order-params.dto';
import { RateOrderDto } from './dto/rate-order.dto';
import { Order } from './order';
import { OrdersService } from './orders.service';

@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post()
  create(@Body() body: CreateOrderDto): Promise<Order> {
    return this.orders.place(body);
  }

  @Get()
  list(@Query() query: ListOrdersQuery): Promise<Order[]> {
    return this.orders.list(query);
  }

  @Get(':id')
  get(@Param() { id }: OrderParams): Promise<Order> {
    return this.orders.get(id);
  }

  @Post(':id/pay')
  @HttpCode(HttpStatus.OK)
  pay(@Param() { id }: OrderParams): Promise<Order> {
    return this.orders.pay(id);
  }

  @Post(':id/ship')
  @HttpCode(HttpStatus.OK)
  ship(@Param() { id }: OrderParams): Promise<Order> {
    return this.orders.ship(id);
  }

  @Post(':id/deliver')
  @HttpCode(HttpStatus.OK)
  deliver(@Param() { id }: OrderParams): Promise<Order> {
    return this.orders.deliver(id);
  }

  @Post(':id/rate')
  @HttpCode(HttpStatus.OK)
  rate(@Param() { id }: OrderParams, @Body() { stars }: RateOrderDto): Promise<Order> {
    return this.orders.rate(id, stars);
  }
}
