export interface TopicSummary {
  readonly topic: string;
  readonly pending: number;
  readonly dead: number;
}
