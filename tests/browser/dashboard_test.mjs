// The dashboard in a real browser against a running phalanxd on the demo cluster (4 nodes x 8
// GPUs, two leaves) where job 1 (16 GPUs within one leaf) already runs:
//   node dashboard_test.mjs URL GSUB GCANCEL SCREENSHOT_DIR      (PHALANX_SOCKET set)
// Checks the map (32 cells; job 1's cells are the GPUs the API says it holds, on one leaf), the
// fragmentation panel's largest free blocks, a job submitted with gsub appearing and, once
// finished, leaving without a reload, a pending job's reason, the job page's history, and no
// console errors; the history charts (queue by reason, waits by size, preemptions, lost work,
// placement efficiency, largest free block per level, GPUs per user and account) with their
// series, units and live growth. Screenshots go to SCREENSHOT_DIR.
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
  // When: the core's what-if. 32 GPUs within the spine wait for job 1's walltime end; 16 within
  // a leaf start now.
  const end1 = (await (await fetch(url + '/api/v1/map')).json()).jobs['1'].expected_end;
  const when32 = await page.$eval('#shapes-table tr[data-level="spine"] [data-gpus="32"]', (e) => ({ start: e.dataset.start, text: e.textContent.trim() }));
  check(when32.start === String(end1) && /^32: at \d\d:\d\d \(in (\d+[dhms] ?)+\)$/.test(when32.text),
    `32 GPUs within the spine: at job 1's end ${end1}: ${JSON.stringify(when32)}`);
  const when16 = await page.$eval('#shapes-table tr[data-level="leaf"] [data-gpus="16"]', (e) => e.textContent.trim());
  check(when16 === '16: now', `16 GPUs within one leaf: "${when16}"`);
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

  // ---- the history charts (phalanxd samples its history every second in this test) ----
  const panels = ['reason-chart', 'wait-size-chart', 'preempt-chart', 'lost-chart', 'placement-chart', 'largest-free-chart',
    'user-chart', 'account-chart'];
  for (const p of panels) check(await page.$(`#${p} svg`) !== null, `#${p} has an svg chart`);
  const legend = (id) => page.$$eval(`#${id} text[data-series]`, (ts) => ts.map((t) => ({ name: t.dataset.series, points: Number(t.dataset.points) })));
  const user = api.user;
  await wait(page, (u) => [...document.querySelectorAll('#user-chart text[data-series]')].some((t) => t.dataset.series === u && Number(t.dataset.points) > 1),
    user, `the per-user chart names ${user} with points`, 20000);
  const users = await legend('user-chart');
  check(users.length >= 1 && users.length <= 7 && users[0].name === user, `per-user series (top 6 + other), ${user} first: ${JSON.stringify(users)}`);
  const accounts = await legend('account-chart');
  const account = api.spec.account || '-';
  check(accounts.some((a) => a.name === account), `per-account chart names account '${account}': ${JSON.stringify(accounts)}`);
  // One line per level, as many as the history has largest_free_block_gpus.* series.
  const hist = await (await fetch(url + '/api/v1/history?series=largest_free_block_gpus.*,placement_efficiency')).json();
  const levels = Object.keys(hist.series).filter((k) => k.startsWith('largest_free_block_gpus.')).map((k) => 'within one ' + k.split('.')[1]).sort();
  const lines = (await legend('largest-free-chart')).map((s) => s.name).sort();
  check(levels.length >= 3 && JSON.stringify(lines) === JSON.stringify(levels), `largest free block: a line per level ${JSON.stringify(lines)} vs ${JSON.stringify(levels)}`);
  check(lines.includes('within one leaf') && lines.includes('within one node'), 'largest free block lines for leaf and node');
  const eff = await legend('placement-chart');
  check(eff.length === 1 && eff[0].points >= 1 && hist.series.placement_efficiency.length >= 1,
    `placement efficiency has points (job 1 runs 16 GPUs): ${JSON.stringify(eff)}`);
  check((await legend('preempt-chart')).length === 1 && (await legend('lost-chart')).length === 1, 'preemption and lost-work charts have their series');
  // Live: a later sample extends the per-user line without a reload.
  const n0 = ((await legend('user-chart')).find((s) => s.name === user) || { points: 0 }).points;
  await wait(page, ([u, n]) => [...document.querySelectorAll('#user-chart text[data-series]')].some((t) => t.dataset.series === u && Number(t.dataset.points) > n),
    [user, n0], 'the per-user line grows with new samples', 20000);
  check(await page.evaluate(() => window.__noReload === 1), 'history charts updated without a reload');

  // Waits by size: the daemon's buckets; job 1 (16 GPUs) and the 8-GPU live job started.
  await wait(page, () => /2-8:[1-9].*9-64:[1-9]/.test((document.querySelector('#wait-size-chart svg') || { dataset: {} }).dataset.buckets || ''),
    null, "the waits-by-size chart counts job 1 in 9-64 and the live job in 2-8");
  const buckets = await page.$eval('#wait-size-chart svg', (s) => s.dataset.buckets);
  check(/^1:\d+,2-8:[1-9]\d*,9-64:[1-9]\d*,65\+:\d+$/.test(buckets), `jobs by size bucket: ${buckets}`);
  const barsShown = await page.$$eval('#wait-size-chart rect[data-series]', (rs) => rs.map((r) => r.dataset.series + ' ' + r.dataset.label));
  check(barsShown.length === 8 && barsShown.some((b) => /^median 9-64 \(\d+\)$/.test(b)) && barsShown.some((b) => /^p90 9-64/.test(b)),
    `median and p90 bars for 4 buckets: ${barsShown.join(', ')}`);

  const units = async (id) => page.$$eval(`#${id} text`, (ts) => ts.map((t) => t.textContent));
  const want = { 'reason-chart': 'pending jobs (jobs)', 'largest-free-chart': 'largest free block (GPUs)', 'placement-chart': 'efficiency (%)',
    'lost-chart': 'lost (GPU-h)', 'user-chart': 'GPUs held (GPUs)', 'account-chart': 'GPUs held (GPUs)' };
  for (const [id, label] of Object.entries(want)) {
    const ts = await units(id);
    check(ts.includes(label) && ts.some((t) => /^time \(local clock; ticks every/.test(t)), `${id}: axis '${label}' and the time axis`);
  }
  check((await units('preempt-chart')).some((t) => /^preemptions \(per \d+ s\)$/.test(t)), 'preemptions axis: per sample interval');
  check((await units('wait-size-chart')).some((t) => /^wait \((s|min|h|d)\)$/.test(t)), 'wait axis in s/min/h/d');
  await page.screenshot({ path: join(shots, 'dashboard-history.png'), fullPage: true });

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
