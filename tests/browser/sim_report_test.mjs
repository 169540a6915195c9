// The simulator's HTML report in a real browser: the dashboard's chart module draws all six
// charts, each axis with its unit, without console errors.
//   node sim_report_test.mjs REPORT.html SCREENSHOT_DIR
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launch, watchErrors } from './browser_lib.mjs';

const [report, shots] = process.argv.slice(2);
let failures = 0;
const check = (ok, what) => {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) failures++;
};
const { context, close } = await launch({ width: 1400, height: 1000 });
try {
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(pathToFileURL(resolve(report)).href);
  const figs = await page.$$eval('figure', (fs) => fs.map((f) => ({ id: f.id, svg: !!f.querySelector('svg'), texts: [...f.querySelectorAll('text')].map((t) => t.textContent) })));
  check(figs.length === 6 && figs.every((f) => f.svg), `6 charts drawn (${figs.filter((f) => f.svg).length})`);
  const byId = Object.fromEntries(figs.map((f) => [f.id, f.texts]));
  check((byId.wait_by_size || []).some((t) => /^average wait \((s|min|h|d)\)$/.test(t)), 'wait by size: y axis in one round time unit');
  check((byId.fragmentation || []).some((t) => /mean of 25, band min-max/.test(t)), 'FGD drawn as a rolling mean with a band');
  check((byId.utilization || []).some((t) => /^simulated time \((s|min|h|d)\)$/.test(t)), 'time axis in a round unit');
  check((byId.jct_cdf || []).some((t) => t === 'job completion time (log scale)'), 'JCT on a log time axis');
  await page.screenshot({ path: join(shots, 'sim-report.png'), fullPage: true });
  check(errors.length === 0, 'no console errors' + (errors.length ? ': ' + errors.join(' | ') : ''));
} finally {
  await close();
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
