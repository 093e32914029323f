import { Product } from './product';

/** The demo catalogue, written into a new database by its first migration; from then on the stock is what orders left. */
export const CATALOGUE_SEED: readonly Product[] = [
  { sku: 'green-tea', name: 'Sencha green tea, 100 g', merchantId: 'leafy', priceCents: 650, stock: 20 },
  { sku: 'black-tea', name: 'Assam black tea, 250 g', merchantId: 'leafy', priceCents: 900, stock: 20 },
  { sku: 'blue-mug', name: 'Stoneware mug, blue', merchantId: 'potters', priceCents: 1800, stock: 10 },
  { sku: 'teapot', name: 'Cast-iron teapot, 0.8 l', merchantId: 'potters', priceCents: 4500, stock: 3 },
];
