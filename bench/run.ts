/** `npm run bench`: every benchmark, figures printed as tables to quote in closing notes. */
import { availableParallelism, cpus } from 'node:os';
import { benchService } from './service.js';

console.log(
  `# voxbridge benchmarks — node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`,
);
await benchService();
