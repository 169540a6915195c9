// The dashboard's speed on a large cluster, in headless Chromium (bench/dashboard_bench.sh runs
// it against phalanxd on gen:superpod:128:32: 4,096 nodes, 32,768 GPUs; AGENTS nodes up).
//   node dashboard_bench.mjs URL GSUB RUNS JOB_GPUS
// Prints, as the median (and min, max) of RUNS:
//  - first paint: navigation start to the first frame with the whole page built (map, tables,
//    charts), and the page's own part of it (its script start to that frame);
//  - update: gsub returning to the browser showing the started job's JOB_GPUS cells (event
//    stream, /api/v1/map and /api/v1/placeable fetched, the map diffed), and the page's part
//    (event received to map updated); then the same for the job leaving when it ends.
import { execFileSync } from 'node:child_process';
import { launch, watchErrors } from './browser_lib.mjs';

const [url, gsub, runsArg, gpusArg] = process.argv.slice(2);
const runs = Number(runsArg || 5), gpus = Number(gpusArg || 128);
const med = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const fmt = (all) => { const xs = all.filter((x) => typeof x === 'number' && isFinite(x)); return xs.length ? fmtOk(xs) : 'n/a'; };
const fmtOk = (xs) => `median ${med(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}, n=${xs.length})`;

const { context, close } = await launch({ width: 1600, height: 1000 });
const build = [], fetchMs = [], historyMs = [], chartsMs = [], paint = [], script = [], start = [], startPage = [], leavePage = [];
let cells = 0, errors = [];
try {
  for (let i = 0; i < runs; i++) {
    const page = await context.newPage();
    errors = errors.concat(watchErrors(page));
    await page.goto(url + '/');
    await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 60000, polling: 10 });
    const t = await page.evaluate(() => ({ nav: window.phxDashboard.timings.navigationToPaintMs, own: window.phxDashboard.timings.firstPaintMs,
      cells: document.querySelectorAll('.gpu').length, build: window.phxDashboard.timings.buildMapMs, fetch: window.phxDashboard.timings.fetchMapMs,
      history: window.phxDashboard.timings.historyMs, charts: window.phxDashboard.timings.chartsMs }));
    historyMs.push(t.history);
    chartsMs.push(t.charts);
    build.push(t.build);
    fetchMs.push(t.fetch);
    paint.push(t.nav);
    script.push(t.own);
    cells = t.cells;
    // An update: a job starts (its cells appear), then ends (they go).
    const t0 = Date.now();
    const id = /Submitted job (\d+)/.exec(execFileSync(gsub, ['-G', String(gpus), '-J', 'bench', '--wrap', 'sleep 2'], { encoding: 'utf8' }))[1];
    await page.waitForFunction(([id, n]) => document.querySelectorAll(`.gpu[data-job="${id}"]`).length === n, [id, gpus], { timeout: 60000, polling: 5 });
    start.push(Date.now() - t0);
    // The update that showed the cells: the last one so far.
    startPage.push(await page.evaluate(() => window.phxDashboard.timings.updatesMs.at(-1)));
    await page.waitForFunction((id) => document.querySelectorAll(`.gpu[data-job="${id}"]`).length === 0, id, { timeout: 60000, polling: 5 });
    leavePage.push(await page.evaluate(() => window.phxDashboard.timings.updatesMs.at(-1)));
    await page.close();
  }
} finally {
  await close();
}
console.log(`cells on the map: ${cells}`);
console.log(`first paint (navigation to the built page):  ${fmt(paint)}`);
console.log(`  of which the page's script:               ${fmt(script)}`);
console.log(`  the map's DOM built (32,768 cells):       ${fmt(build)}`);
console.log(`  /api/v1/map + /api/v1/placeable fetched:  ${fmt(fetchMs)}`);
console.log(`  samples + history read (/api/v1/history):  ${fmt(historyMs)}`);
console.log(`  the 11 charts drawn:                      ${fmt(chartsMs)}`);
console.log(`update, job of ${gpus} GPUs starts (gsub to its cells shown): ${fmt(start)}`);
console.log(`  of which the page (event to map updated): ${fmt(startPage)}`);
console.log(`update, the job ends (event to map updated): ${fmt(leavePage)}`);
console.log(`console errors: ${errors.length}` + (errors.length ? ' ' + errors.slice(0, 3).join(' | ') : ''));
