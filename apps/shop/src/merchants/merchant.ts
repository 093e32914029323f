export interface Merchant {
  readonly id: string;
  readonly name: string;
}
