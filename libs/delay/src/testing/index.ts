// nestjs-delay/testing: what an application's own tests need to fast-forward time.
export { VirtualClock } from '../time/virtual-clock';
export { DelayTestingModule } from './delay-testing.module';
