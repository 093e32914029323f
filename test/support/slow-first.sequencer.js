// Orders the suite's test files for Jest. Jest starts the files it has timed
// before longest first; on a fresh clone (CI) it has no timings and goes by
// file size, which can leave a 90-second file to start last and run alone at
// the end. Files with no timing of Jest's own take their duration from
// slow-test-files.json, so the long ones start first everywhere.
const Sequencer = require('@jest/test-sequencer').default;
const path = require('node:path');
const { seconds } = require('./slow-test-files.json');

const root = path.resolve(__dirname, '../..');

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const ms = (test) => this.time(test) ?? (seconds[path.relative(root, test.path).split(path.sep).join('/')] ?? 0) * 1000;
    for (const test of tests) test.duration = ms(test);
    // Files that failed last time first (Jest's own rule), then the longest.
    return [...tests].sort((a, b) => Number(this.hasFailed(b)) - Number(this.hasFailed(a)) || b.duration - a.duration);
  }
}

module.exports = SlowFirstSequencer;
