// The dashboard in a real browser against a running phalanxd on the demo cluster (4 nodes x 8
// GPUs, two leaves) where job 1 (16 GPUs within one leaf) already runs:
//   node dashboard_test.mjs URL GSUB GCANCEL SCREENSHOT_DIR      (PHALANX_SOCKET set)
// Checks the map (32 cells; job 1's cells are the GPUs the API says it holds, on one leaf), the
// fragmentation panel's largest free blocks, a job submitted with gsub appearing and, once
// finished, leaving without a reload, a pending job's reason, the job page's history, and no
// console errors. Screenshots go to SCREENSHOT_DIR.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launch, watchErrors } from './browser_lib.mjs';

const [url, gsub, gcancel, shots] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
let failures = 0;
const check = (ok, what) => {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) failures++;
};
const run = (bin, args) => execFileSync(bin, args, { encoding: 'utf8' }).trim();
const wait = (page, fn, arg, what, timeout = 10000) =>
  page.waitForFunction(fn, arg, { timeout, polling: 50 }).then(() => true, () => { check(false, 'timed out: ' + what); return false; });

const { context, close } = await launch();
try {
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(url + '/');
  await wait(page, () => document.body.dataset.ready === '1', null, 'the page is ready');

  // ---- the map ----
  const cells = await page.$$eval('.gpu', (cs) => cs.map((c) => ({ node: c.dataset.node, gpu: c.dataset.gpu, job: c.dataset.job || '' })));
  check(cells.length === 32, `32 GPU cells (${cells.length})`);
  const api = await (await fetch(url + '/api/v1/jobs/1')).json();
  const held = new Set(api.gpus.map((g) => `${g.node}/${g.index}`));
  check(held.size === 16, `job 1 holds 16 GPUs (${held.size})`);
  const mismatch = cells.filter((c) => (c.job === '1') !== held.has(`${c.node}/${c.gpu}`));
  check(mismatch.length === 0, 'data-job="1" on exactly the GPUs job 1 holds' + (mismatch.length ? ': ' + JSON.stringify(mismatch) : ''));
  const nodes1 = [...new Set(cells.filter((c) => c.job === '1').map((c) => c.node))].sort();
  check(JSON.stringify(nodes1) === '["node0","node1"]', `job 1 on node0 and node1, leaf0 (${nodes1})`);
  const leafOf = await page.$$eval('.gpu[data-job="1"]', (cs) => [...new Set(cs.map((c) => c.closest('.dom.leaf').dataset.domain))]);
  check(leafOf.length === 1, `job 1's cells lie in one leaf box (${leafOf})`);
  check(cells.filter((c) => c.job === '').length === 16, '16 free cells');

  // Hover: the tip names the job, its user and its bandwidth.
  await page.hover('.gpu[data-node="node0"][data-gpu="3"]');
  const tip = await page.textContent('#tip');
  check(/job 1/.test(tip) && /busbw .* GB\/s \(best for 16 GPUs/.test(tip) && /time left/.test(tip), 'hover tip: ' + tip.replace(/\s+/g, ' '));

  // ---- fragmentation: leaf1 and node2/node3 free ----
  const largest = await page.$$eval('#frag-table tbody tr', (rs) => Object.fromEntries(rs.map((r) => [r.dataset.level, r.dataset.largestFree])));
  check(largest.leaf === '16' && largest.node === '8' && largest.spine === '16', 'largest free block: leaf 16, node 8, spine 16 ' + JSON.stringify(largest));
  const shown = await page.textContent('#frag-table tbody tr[data-level="leaf"]');
  check(/16/.test(shown), 'the leaf row shows 16');
  const leaf32 = await page.$eval('#shapes-table tr[data-level="spine"] [data-gpus="32"]', (e) => e.dataset.status).catch(() => 'none');
  check(leaf32 === 'busy', `32 GPUs within the spine: busy now (${leaf32})`);
  const leaf16 = await page.$eval('#shapes-table tr[data-level="leaf"] [data-gpus="16"]', (e) => e.dataset.status).catch(() => 'none');
  check(leaf16 === 'placed', `16 GPUs within one leaf: could start now (${leaf16})`);
  await page.screenshot({ path: join(shots, 'dashboard.png'), fullPage: true });

  // ---- live: a job submitted with gsub appears, then leaves when it has finished ----
  await page.evaluate(() => { window.__noReload = 1; });
  const before = await page.evaluate(() => Number(document.body.dataset.updates || 0));
  const out = run(gsub, ['-G', '8', '-J', 'live', '--wrap', 'sleep 3']);
  const id = /Submitted job (\d+)/.exec(out)[1];
  await wait(page, (id) => document.querySelectorAll(`.gpu[data-job="${id}"]`).length === 8 &&
    document.querySelector(`#running-table tr[data-job="${id}"]`), id, `job ${id}: 8 cells and a running row`);
  check(await page.evaluate(() => window.__noReload === 1), 'no reload');
  check(await page.evaluate((b) => Number(document.body.dataset.updates) > b, before), 'updated by the event stream');
  check(await page.$eval('#live', (e) => e.textContent) === 'live', 'the live badge says live');
  await page.screenshot({ path: join(shots, 'live-job.png'), fullPage: true });
  const leaf2 = await page.$eval('#frag-table tbody tr[data-level="leaf"]', (r) => r.dataset.largestFree);
  check(leaf2 === '8', `largest free leaf block 8 with job ${id} running (${leaf2})`);
  await wait(page, (id) => document.querySelectorAll(`.gpu[data-job="${id}"]`).length === 0 &&
    !document.querySelector(`#running-table tr[data-job="${id}"]`), id, `job ${id} leaves when it ends`, 15000);
  check(await page.evaluate(() => window.__noReload === 1), 'still no reload');

  // ---- a pending job with its reason, cancelled ----
  const big = /Submitted job (\d+)/.exec(run(gsub, ['-G', '32', '-J', 'big', '--wrap', 'true']))[1];
  if (await wait(page, (id) => /Resources|Priority|Reserved/.test((document.querySelector(`#pending-table tr[data-job="${id}"]`) || {}).textContent),
    big, `job ${big} pending with its reason`)) {
    const text = await page.textContent(`#pending-table tr[data-job="${big}"]`);
    check(/Resources|Priority|Reserved/.test(text), `pending row with its reason: ${text}`);
  }
  run(gcancel, [big]);
  await wait(page, (id) => !document.querySelector(`#pending-table tr[data-job="${id}"]`), big, `cancelled job ${big} leaves`);

  // ---- the job page ----
  await page.click('.gpu[data-node="node1"][data-gpu="0"]');
  await wait(page, () => !document.getElementById('job-panel').hidden && document.querySelectorAll('#job-events tbody tr').length >= 2,
    null, 'the job page with its history');
  const events = await page.$$eval('#job-events tbody tr', (rs) => rs.map((r) => r.cells[1].textContent));
  check(events[0] === 'submit' && events.includes('start'), 'job 1 history: ' + events.join(', '));
  check(await page.evaluate(() => location.hash) === '#job=1', 'the job page has its own address (#job=1)');
  await page.screenshot({ path: join(shots, 'job-page.png'), fullPage: true });

  // ---- the shared charts: units on the axes ----
  const axes = await page.$$eval('#util-chart text', (ts) => ts.map((t) => t.textContent));
  check(axes.some((t) => t === 'GPUs (GPUs)') && axes.some((t) => /^time \(local clock; ticks every/.test(t)), 'utilization axes have units');

  check(errors.length === 0, 'no console errors' + (errors.length ? ': ' + errors.join(' | ') : ''));
} catch (e) {
  check(false, 'exception: ' + (e.stack || e));
} finally {
  await close();
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
