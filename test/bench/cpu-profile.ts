/**
 * Preloaded into the service by a bench (`bench:writes`, `bench:statuses`, `bench:api`) when
 * BENCH_CPU_PROF is set (`--import`, since `--cpu-prof` is not allowed in NODE_OPTIONS): samples
 * the CPU from start-up to exit and writes a .cpuprofile (Chrome DevTools format) into
 * CAIRN_BENCH_CPU_PROF_DIR when the process exits.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const dir = process.env.CAIRN_BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  // An in-process inspector session answers synchronously, so this completes inside the exit handler.
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error) fs.writeFileSync(path.join(dir, `cairn-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
