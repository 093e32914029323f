import { Merchant } from './merchant';

/** The demo merchants; the catalogue's products name them. */
export const MERCHANTS_SEED: ReadonlyArray<Pick<Merchant, 'id' | 'name'>> = [
  { id: 'leafy', name: 'Leafy Teas' },
  { id: 'potters', name: 'The Potters' },
];
