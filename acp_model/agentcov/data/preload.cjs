// acp-model --coverage: the V8 coverage of a Node agent, restricted to its ACP layer.
// Loaded into every Node process of the agent (NODE_OPTIONS=--require); it starts V8's
// precise (block) coverage through an in-process inspector session before the agent's own
// code loads, and writes what ran since the last snapshot when the fuzzer asks (SIGUSR2, after
// each example) and at exit. Only scripts whose path matches ACPM_COVERAGE_FILES are kept.
'use strict';
(() => {
  const dir = process.env.ACPM_COVERAGE_DIR;
  if (!dir || globalThis.__acpmCoverage) return;
  globalThis.__acpmCoverage = true;
  const fs = require('fs');
  const path = require('path');
  // only the processes whose main script is in the layer's packages: another Node program the
  // agent starts (a CLI it drives) runs unmeasured, at full speed
  const mains = JSON.parse(process.env.ACPM_COVERAGE_MAIN || '[]').map((s) => new RegExp(s));
  if (mains.length) {
    let main = process.argv[1] || '';
    try { main = fs.realpathSync(main); } catch (err) { /* as given */ }
    const raw = process.argv[1] || '';
    if (!mains.some((re) => re.test(main) || re.test(raw))) return;
  }
  let session;
  try {
    session = new (require('inspector').Session)();
    session.connect();
    session.post('Profiler.enable');
    session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  } catch (err) {
    return; // no inspector in this runtime: nothing measured (the report says no process was)
  }
  const keep = JSON.parse(process.env.ACPM_COVERAGE_FILES || '[]').map((s) => new RegExp(s));
  const wanted = (url) => {
    if (!url.startsWith('file://')) return false;
    const file = decodeURIComponent(url.slice('file://'.length));
    return keep.some((re) => re.test(file));
  };
  let start = '';
  try {
    start = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[19];
  } catch (err) { /* not Linux: no start time to check */ }
  const me = { pid: process.pid, runtime: 'node', start, executable: process.execPath };
  fs.writeFileSync(path.join(dir, `pid-${process.pid}.json`), JSON.stringify(me));
  let seq = 0;
  const take = (ack) => {
    let result = null;
    session.post('Profiler.takePreciseCoverage', (err, res) => { if (!err) result = res.result; });
    if (result !== null) {
      const scripts = result.filter((s) => wanted(s.url));
      seq += 1;
      const out = path.join(dir, `v8-${process.pid}-${seq}.json`);
      fs.writeFileSync(`${out}.part`, JSON.stringify(scripts));
      fs.renameSync(`${out}.part`, out);
    }
    if (ack) fs.writeFileSync(path.join(dir, `ack-${process.pid}-${ack}`), '');
  };
  process.on('SIGUSR2', () => {
    let ask = '';
    try { ask = fs.readFileSync(path.join(dir, 'request'), 'utf8').trim(); } catch (err) { /**/ }
    take(ask);
  });
  process.on('exit', () => take(''));
})();
