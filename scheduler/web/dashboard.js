// phalanxd's dashboard: the cluster map, fragmentation, utilization, the queue and a job page,
// live through /api/v1/events (Server-Sent Events). Read-only; every request goes to the
// origin that served the page. docs/dashboard.md describes the endpoints it reads.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const C = window.PhxChart;
  const st = {
    map: null,           // /api/v1/map
    domainsKey: '',      // rebuild the map when the topology changes
    cells: [],           // GPU elements by global GPU index
    owners: [],          // what the cells show now
    nodeEls: new Map(),  // domain index -> node element
    jobs: new Map(),     // id (string) -> the API's Job
    samples: [],         // utilization samples, oldest first
    historySource: '',
    selected: null,
    timings: { firstPaintMs: null, updatesMs: [] },
  };
  window.phxDashboard = st;  // for tests and the benchmark: timings, counts

  function showError(e) {
    const f = $('errors');
    f.hidden = false;
    f.textContent = 'dashboard: ' + (e && e.message ? e.message : String(e));
  }

  async function getJson(path) {
    const r = await fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    if (!r.ok) {
      let msg = 'HTTP ' + r.status;
      try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
      const err = new Error(path + ': ' + msg);
      err.status = r.status;
      throw err;
    }
    return r.json();
  }

  function jobColor(id) {
    const h = (Number(id) * 137.508) % 360;
    return `hsl(${h.toFixed(0)}, 62%, ${48 + (Number(id) * 7) % 20}%)`;
  }
  const nowS = () => (st.map ? st.map.now + (Date.now() / 1000 - st.mapFetched) : Date.now() / 1000);
  const dur = (s) => (s > 0 ? C.formatDuration(Math.round(s)) : '-');
  const stamp = (t) => (t > 0 ? new Date(t * 1000).toLocaleString() : '-');
  const stateName = (s) => String(s || '').replace(/^JOB_STATE_/, '').toLowerCase();

  // ---- the map ------------------------------------------------------------------------------
  function buildMap(map) {
    const root = $('map');
    const frag = document.createDocumentFragment();
    const holders = [];
    st.cells = new Array(map.gpus);
    st.owners = new Array(map.gpus).fill(0);
    st.nodeEls.clear();
    map.domains.forEach((d, i) => {
      const [level, name, parent, first, count, nodeState] = d;
      const holder = parent >= 0 && holders[parent] ? holders[parent] : frag;
      if (level === 'core' && parent < 0) { holders[i] = frag; return; }  // the synthetic root
      if (level === 'node') {
        const n = document.createElement('div');
        // Columns: 4 (two rows of a DGX's 8), or 1, 2, 8 for other sizes (classes c1 c2 c8).
        const cols = count <= 2 ? count : count <= 8 ? 4 : 8;
        n.className = 'node ' + nodeState + (cols === 4 ? '' : ' c' + cols);
        n.dataset.node = name;
        for (let g = 0; g < count; g++) {
          const c = document.createElement('i');
          c.className = 'gpu';
          c.dataset.node = name;
          c.dataset.gpu = String(g);
          c.dataset.index = String(first + g);
          n.appendChild(c);
          st.cells[first + g] = c;
        }
        st.nodeEls.set(i, n);
        holder.appendChild(n);
        holders[i] = n;
      } else {
        const box = document.createElement('div');
        box.className = 'dom ' + level;
        box.dataset.domain = name;
        box.dataset.level = level;
        const label = document.createElement('span');
        label.className = 'label';
        label.textContent = `${level} ${name} (${count} GPUs)`;
        box.appendChild(label);
        holder.appendChild(box);
        holders[i] = box;
      }
    });
    root.classList.toggle('dense', map.gpus > 2048);
    root.classList.toggle('big', map.gpus <= 512);
    root.replaceChildren(frag);
    $('map-legend').replaceChildren(...legend());
  }
  function legend() {
    const out = [];
    for (const [cls, text] of [['free', 'free'], ['drain', 'drained'], ['down', 'down']]) {
      const s = document.createElement('span');
      s.className = 'legend-swatch';
      s.style.background = `var(--${cls})`;
      out.push(s, document.createTextNode(text));
    }
    out.push(document.createTextNode(' \u00b7 allocated GPUs in their job\u2019s colour'));
    return out;
  }

  function applyMap(map) {
    const key = map.domains.map((d) => d[1] + '/' + d[4]).join(',');
    if (key !== st.domainsKey) {
      const t0 = performance.now();
      buildMap(map);
      st.timings.buildMapMs = performance.now() - t0;
      st.domainsKey = key;
    }
    map.domains.forEach((d, i) => {
      const n = st.nodeEls.get(i);
      if (n && !n.classList.contains(d[5])) {
        n.classList.remove('up', 'drain', 'down');
        n.classList.add(d[5]);
      }
    });
    const owner = map.owner;
    for (let g = 0; g < owner.length; g++) {
      if (st.owners[g] === owner[g]) continue;
      const c = st.cells[g];
      const o = owner[g];
      if (o > 0) {
        c.dataset.job = String(o);
        c.style.background = jobColor(o);
        c.classList.remove('held');
      } else {
        delete c.dataset.job;
        c.style.background = '';
        c.classList.toggle('held', o === -1);
        c.classList.toggle('external', o === -2);  // Slurm's own job (Slurm mode)
      }
      st.owners[g] = o;
    }
  }

  function tipFor(cell) {
    const lines = [`${cell.dataset.node} GPU ${cell.dataset.gpu}`];
    const id = cell.dataset.job;
    const nodeEl = cell.parentElement;
    if (nodeEl && !nodeEl.classList.contains('up')) lines.push('node ' + [...nodeEl.classList].filter((c) => c !== 'node').join(' '));
    if (!id) {
      lines.push(cell.classList.contains('held') ? 'held' : 'free');
      return lines;
    }
    const job = st.jobs.get(id);
    const m = st.map && st.map.jobs[id];
    lines.push(`job ${id}` + (job && job.spec && job.spec.name ? ` (${job.spec.name})` : ''));
    if (job) lines.push(`user ${job.user}`, `${(job.gpus || []).length} GPUs on ${job.nodelist}`);
    if (m) {
      lines.push(`run time ${dur(nowS() - m.start)}, time left ${dur(m.expected_end - nowS())}`);
      lines.push(`busbw ${m.busbw_gbs.toFixed(1)} GB/s (best for ${m.gpus} GPUs: ${m.best_busbw_gbs.toFixed(1)} GB/s)`);
    }
    return lines;
  }
  function setupMapEvents() {
    const map = $('map'), tip = $('tip');
    map.addEventListener('mousemove', (ev) => {
      const cell = ev.target.closest && ev.target.closest('.gpu');
      if (!cell) { tip.hidden = true; return; }
      tip.replaceChildren(...tipFor(cell).flatMap((l, i) => (i ? [document.createElement('br'), document.createTextNode(l)] : [document.createTextNode(l)])));
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 370) + 'px';
      tip.style.top = ev.clientY + 14 + 'px';
    });
    map.addEventListener('mouseleave', () => { tip.hidden = true; });
    map.addEventListener('click', (ev) => {
      const cell = ev.target.closest && ev.target.closest('.gpu');
      if (cell && cell.dataset.job) showJob(cell.dataset.job);
    });
  }

  // ---- fragmentation ----------------------------------------------------------------------------
  function row(cells, onClick) {
    const tr = document.createElement('tr');
    for (const c of cells) {
      const td = document.createElement('td');
      if (typeof c === 'number') td.className = 'num';
      if (c instanceof Node) td.appendChild(c); else td.textContent = String(c);
      tr.appendChild(td);
    }
    if (onClick) { tr.className = 'click'; tr.addEventListener('click', onClick); }
    return tr;
  }
  function applyPlaceable(p) {
    const rows = [], shapes = [];
    for (const l of p.levels) {
      const blocks = l.free_blocks.slice().sort((a, b) => b[0] - a[0]).map(([g, n]) => `${g}\u00d7${n}`).join(' ') || 'none';
      const tr = row([l.level, l.domains, l.domains ? wholeFree(l) : 0, l.largest_free_block, blocks]);
      tr.dataset.level = l.level;
      tr.dataset.largestFree = String(l.largest_free_block);
      rows.push(tr);
      const answers = document.createElement('span');
      for (const s of l.shapes) {
        // When: the core's what-if (start_s: now, a time, or null for never); status: the
        // Placer on the GPUs free now, reservations aside.
        const a = document.createElement('span');
        const when = startText(s.start_s, p.now);
        a.className = when === 'now' ? 'ok' : when === 'never' ? 'never' : 'busy';
        a.textContent = `${s.gpus}: ${when}  `;
        const tip = [];
        if (s.status === 'placed') tip.push(`predicted busbw ${s.busbw_gbs.toFixed(1)} GB/s`);
        if (s.wait) tip.push('waits for ' + s.wait + (s.why ? ' (' + s.why + ')' : ''));
        else if (s.why) tip.push(s.why);
        if (s.start_s !== null && s.start_s > p.now && !s.promised) tip.push('no reservation promised: later jobs may take it');
        if (s.reason && s.status !== 'placed') tip.push(s.reason);
        a.title = tip.join('; ');
        a.dataset.gpus = String(s.gpus);
        a.dataset.status = s.status;
        a.dataset.start = s.start_s === null || s.start_s === undefined ? 'never' : String(s.start_s);
        answers.appendChild(a);
      }
      const tr2 = row([l.level === 'core' ? 'cluster (any placement)' : l.level, answers]);
      tr2.dataset.level = l.level;
      shapes.push(tr2);
    }
    $('frag-table').tBodies[0].replaceChildren(...rows);
    $('shapes-table').tBodies[0].replaceChildren(...shapes);
  }
  // "now", "at 14:05 (in 2h 10m)" (with the date past a day), or "never".
  function startText(start, now) {
    if (start === null || start === undefined) return 'never';
    if (start <= now) return 'now';
    const d = new Date(start * 1000);
    const p2 = (n) => String(n).padStart(2, '0');
    let at = p2(d.getHours()) + ':' + p2(d.getMinutes());
    if (start - now >= 86400) at = d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' }) + ' ' + at;
    return `at ${at} (in ${inDur(start - now)})`;
  }
  function inDur(s) {
    s = Math.round(s);
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d > 0) return `${d}d ${h}h`;
    if (h > 0) return `${h}h ${m}m`;
    if (m > 0) return `${m}m`;
    return `${s}s`;
  }
  function wholeFree(l) {
    const whole = l.free_blocks.find(([g]) => g === l.domain_gpus);
    return whole ? whole[1] : 0;
  }

  // ---- utilization and history -----------------------------------------------------------------
  function drawCharts() {
    const s = st.samples;
    const win = s.length > 60 ? 12 : 1;
    C.line($('util-chart'), {
      title: 'GPUs allocated vs offered',
      series: [
        { name: 'offered (up)', points: s.map((x) => [x.time, x.total - x.unavailable]), color: '#999' },
        { name: 'allocated', points: s.map((x) => [x.time, x.allocated]), window: win },
      ],
      x: { kind: 'clock' }, y: { label: 'GPUs', unit: 'GPUs', min: 0 },
    });
    C.line($('queue-chart'), {
      title: 'Jobs',
      series: [
        { name: 'pending', points: s.map((x) => [x.time, x.pending]), window: win },
        { name: 'running', points: s.map((x) => [x.time, x.running]), window: win },
      ],
      x: { kind: 'clock' }, y: { label: 'jobs', unit: 'jobs', min: 0 },
    });
    C.line($('frag-chart'), {
      title: 'Fragmentation over time',
      series: [{ name: 'FGD (share of idle GPUs unusable)', points: s.map((x) => [x.time, 100 * x.fgd]), window: win }],
      x: { kind: 'clock' }, y: { label: 'FGD', unit: '%', min: 0, max: 100 },
      height: 180,
    });
  }
  // The header's line, from the map and the queue as they are now.
  function drawSummary(placeable) {
    const m = st.map;
    let allocated = 0, unavailable = 0;
    for (const o of m.owner) if (o > 0) allocated++;
    for (const d of m.domains) if (d[0] === 'node' && d[5] !== 'up') unavailable += d[4];
    let running = 0, pending = 0;
    for (const j of st.jobs.values()) {
      const s = stateName(j.state);
      if (s === 'pending') pending++;
      else if (s === 'running' || s === 'checkpointing') running++;
    }
    const largest = Math.max(0, ...placeable.levels.map((l) => l.largest_free_block));
    $('summary').textContent = `${allocated} of ${m.gpus} GPUs allocated, ${unavailable} on drained or down nodes, ` +
      `${running} jobs running, ${pending} pending, largest free block ${largest} GPUs`;
  }
  async function loadHistory() {
    const since = Math.floor(Date.now() / 1000) - HISTORY_WINDOW_S;
    const r = await getJson(`/api/v1/samples?since=${since}`);
    st.samples = r.samples;
    st.sampleInterval = r.interval_s;
    st.hasHistory = !!r.history;
    st.history = {};
    st.historySource = `samples phalanxd took since it started (every ${r.interval_s} s), then live`;
    if (r.history) {
      // Kept in the store (survives restarts): preferred when this phalanxd serves it.
      try {
        const h = await getJson(`/api/v1/history?series=${HISTORY_SERIES}&since=${since}`);
        st.history = h.series || {};
        st.historyRead = performance.now();
        const s = historyToSamples(st.history);
        if (s.length) {
          st.samples = s;
          st.historySource = 'history kept in the store (last 6 h), then live';
        }
      } catch (e) { showError(e); }
    }
    $('history-note').textContent = 'Series: ' + st.historySource + '.';
    $('usage-note').textContent = st.hasHistory ? '' : 'Per user and account usage needs the store\u2019s history (/api/v1/history).';
  }
  const HISTORY_WINDOW_S = 6 * 3600;
  const HISTORY_SERIES = ['gpus_allocated', 'gpus_total', 'gpus_drained', 'gpus_down', 'jobs_pending', 'jobs_running', 'fgd',
    'placement_efficiency', 'preemptions', 'checkpoint_lost_gpu_hours', 'queue_jobs.*', 'largest_free_block_gpus.*',
    'user_gpus.*', 'account_gpus.*'].join(',');
  // /api/v1/history: {series: {name: [[t, v], ...]}} into samples by time (the shape of the
  // daemon's own samples: unavailable = drained + down).
  function historyToSamples(series) {
    const by = new Map();
    const add = (name, field) => {
      for (const [t, v] of series[name] || []) {
        if (!by.has(t)) by.set(t, { time: t, allocated: 0, total: 0, unavailable: 0, pending: 0, running: 0, fgd: 0 });
        by.get(t)[field] += v;
      }
    };
    add('gpus_total', 'total');
    add('gpus_allocated', 'allocated');
    add('gpus_drained', 'unavailable');
    add('gpus_down', 'unavailable');
    add('jobs_pending', 'pending');
    add('jobs_running', 'running');
    add('fgd', 'fgd');
    return [...by.values()].filter((s) => s.total > 0).sort((a, b) => a.time - b.time);
  }
  // The sampler's interval, from the spacing of the cluster-wide series (always written).
  function historyInterval() {
    const pts = (st.history && st.history.gpus_total) || [];
    if (pts.length < 2) return st.sampleInterval || 5;
    const gaps = [];
    for (let i = 1; i < pts.length; i++) gaps.push(pts[i][0] - pts[i - 1][0]);
    return Math.max(1, quantile(gaps.sort((a, b) => a - b), 0.5));
  }
  // On a `sample` event: the history's new points, at most once per sampler interval (no timer).
  async function refreshHistory() {
    if (!st.hasHistory || st.historyBusy) return;
    if (performance.now() - st.historyRead < 1000 * historyInterval()) return;
    st.historyBusy = true;
    try {
      let last = 0;
      for (const pts of Object.values(st.history)) if (pts.length) last = Math.max(last, pts[pts.length - 1][0]);
      const h = await getJson(`/api/v1/history?series=${HISTORY_SERIES}&since=${last + 1}`);
      st.historyRead = performance.now();
      const cut = Math.floor(Date.now() / 1000) - HISTORY_WINDOW_S;
      for (const [name, pts] of Object.entries(h.series || {})) {
        const old = (st.history[name] || []).filter((p) => p[0] >= cut);
        st.history[name] = old.concat(pts.filter((p) => !old.length || p[0] > old[old.length - 1][0]));
      }
      drawHistoryCharts();
      await loadWaits();
    } catch (e) { showError(e); } finally { st.historyBusy = false; }
  }

  // Nearest-rank quantile of an ascending array.
  function quantile(sorted, q) {
    if (!sorted.length) return 0;
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  }
  // A family (`user_gpus.*`) as {suffix: points}.
  function family(prefix) {
    const out = {};
    for (const [name, pts] of Object.entries(st.history || {})) if (name.startsWith(prefix + '.')) out[name.slice(prefix.length + 1)] = pts;
    return out;
  }
  // Labeled series are written while non-zero (and once at 0): at a sample time without a
  // point the value is 0. The top `n` by GPU-time as lines, the rest summed as "other".
  function topSeries(prefix, n) {
    const fam = family(prefix);
    const times = new Set(((st.history && st.history.gpus_total) || []).map((p) => p[0]));
    const value = {};
    const sum = {};
    for (const [k, pts] of Object.entries(fam)) {
      value[k] = new Map(pts);
      sum[k] = pts.reduce((a, p) => a + p[1], 0);
      for (const [t] of pts) times.add(t);
    }
    const sorted = [...times].sort((a, b) => a - b);
    const names = Object.keys(fam).sort((a, b) => sum[b] - sum[a] || (a < b ? -1 : 1));
    const top = names.slice(0, n), rest = names.slice(n);
    const series = top.map((k) => ({ name: k, points: sorted.map((t) => [t, value[k].get(t) || 0]) }));
    if (rest.length) {
      series.push({ name: `other (${rest.length})`, color: '#999',
        points: sorted.map((t) => [t, rest.reduce((a, k) => a + (value[k].get(t) || 0), 0)]) });
    }
    return series;
  }
  const LEVEL_ORDER = ['gpu', 'group', 'node', 'nvl', 'leaf', 'spine', 'core'];
  function drawHistoryCharts() {
    const h = st.history || {};
    const pts = (name) => h[name] || [];
    const noisy = (p) => (p.length > 60 ? 12 : 1);
    const note = st.hasHistory ? undefined : 'no history';
    C.line($('reason-chart'), {
      title: 'Queue length by reason' + (note ? ` (${note})` : ''),
      series: topSeries('queue_jobs', 8).map((x) => ({ ...x, window: noisy(x.points) })),
      x: { kind: 'clock' }, y: { label: 'pending jobs', unit: 'jobs', min: 0 },
    });
    const levels = family('largest_free_block_gpus');
    const order = (l) => (LEVEL_ORDER.indexOf(l) < 0 ? 99 : LEVEL_ORDER.indexOf(l));
    C.line($('largest-free-chart'), {
      title: 'Largest free block by level' + (note ? ` (${note})` : ''),
      series: Object.keys(levels).sort((a, b) => order(a) - order(b)).map((k) => ({ name: 'within one ' + k, points: levels[k] })),
      x: { kind: 'clock' }, y: { label: 'largest free block', unit: 'GPUs', min: 0 },
      height: 180,
    });
    const pre = pts('preemptions');
    C.line($('preempt-chart'), {
      title: 'Preemptions per sample interval',
      series: [{ name: 'preemptions', points: pre, color: '#d62728' }],
      x: { kind: 'clock' }, y: { label: 'preemptions', unit: `per ${C.formatDuration(historyInterval())}`, min: 0 },
      height: 160,
    });
    const lost = pts('checkpoint_lost_gpu_hours');
    C.line($('lost-chart'), {
      title: 'Work lost since the last checkpoint (preemptions, failures)',
      series: [{ name: 'lost per interval', points: lost, color: '#8c564b' }],
      x: { kind: 'clock' }, y: { label: 'lost', unit: 'GPU-h', min: 0 },
      height: 160,
    });
    const eff = pts('placement_efficiency').map(([t, v]) => [t, 100 * v]);
    C.line($('placement-chart'), {
      title: 'Placement efficiency (busbw of running jobs vs the best for their size)',
      series: [{ name: 'placement efficiency', points: eff, window: noisy(eff) }],
      x: { kind: 'clock' }, y: { label: 'efficiency', unit: '%', min: 0, max: 100 },
      height: 180,
    });
    C.line($('user-chart'), {
      title: 'GPUs by user (top 6, the rest as other)',
      series: topSeries('user_gpus', 6),
      x: { kind: 'clock' }, y: { label: 'GPUs held', unit: 'GPUs', min: 0 },
    });
    C.line($('account-chart'), {
      title: 'GPUs by account (top 6, the rest as other)',
      series: topSeries('account_gpus', 6),
      x: { kind: 'clock' }, y: { label: 'GPUs held', unit: 'GPUs', min: 0 },
    });
  }

  // Waits by job size: the daemon's buckets (JobSizeBucket, phalanx_job_wait_seconds{size}) of
  // the jobs that started in the window, from the jobs list (finished ones included).
  const SIZE_BUCKETS = [['1', 1, 1], ['2-8', 2, 8], ['9-64', 9, 64], ['65+', 65, Infinity]];
  async function loadWaits() {
    const r = await getJson('/api/v1/jobs?include_finished=true');
    const since = Math.floor(Date.now() / 1000) - HISTORY_WINDOW_S;
    const waits = SIZE_BUCKETS.map(() => []);
    for (const j of r.jobs || []) {
      const start = Number(j.start_time), submit = Number(j.submit_time);
      if (!(start > 0) || start < since || !(submit > 0)) continue;
      const g = Number(j.spec && j.spec.gpus) || (j.gpus || []).length;
      const b = SIZE_BUCKETS.findIndex(([, lo, hi]) => g >= lo && g <= hi);
      if (b >= 0) waits[b].push(Math.max(0, start - submit));
    }
    for (const w of waits) w.sort((a, b) => a - b);
    st.waits = waits.map((w) => w.length);
    const bar = C.bars($('wait-size-chart'), {
      title: 'Wait by job size (jobs started in the last 6 h)',
      labels: SIZE_BUCKETS.map(([name], i) => `${name} (${waits[i].length})`),
      series: [{ name: 'median', values: waits.map((w) => quantile(w, 0.5)) },
        { name: 'p90', values: waits.map((w) => quantile(w, 0.9)), color: '#ff7f0e' }],
      x: { label: 'job size, GPUs (jobs started)' }, y: { label: 'wait', kind: 'duration' },
      height: 180,
    });
    bar.dataset.buckets = SIZE_BUCKETS.map(([name], i) => name + ':' + waits[i].length).join(',');
  }

  // ---- the queue ----------------------------------------------------------------------------------
  function drawQueue() {
    const now = nowS();
    const pending = [], running = [];
    const jobs = [...st.jobs.values()].sort((a, b) => Number(a.id) - Number(b.id));
    for (const j of jobs) {
      const s = stateName(j.state);
      const open = () => showJob(j.id);
      if (s === 'pending') {
        const tr = row([j.id, j.spec.name, j.user, j.spec.gpus, (j.held ? 'held ' : '') + j.reason + (j.reason_detail ? ': ' + j.reason_detail : ''),
          Number(j.predicted_start) > 0 ? stamp(Number(j.predicted_start)) : 'unknown', dur(now - Number(j.submit_time))], open);
        tr.dataset.job = j.id;
        pending.push(tr);
      } else if (s === 'running' || s === 'checkpointing') {
        const m = st.map && st.map.jobs[j.id];
        const tr = row([j.id, j.spec.name, j.user, (j.gpus || []).length, j.nodelist, dur(now - Number(j.start_time)),
          dur(Number(j.start_time) + Number(j.walltime_s) - now),
          m ? `${m.busbw_gbs.toFixed(1)} (${m.best_busbw_gbs.toFixed(1)})` : j.busbw_gbs.toFixed(1)], open);
        tr.dataset.job = j.id;
        running.push(tr);
      }
    }
    $('pending-table').tBodies[0].replaceChildren(...pending);
    $('running-table').tBodies[0].replaceChildren(...running);
  }

  // ---- the job page -------------------------------------------------------------------------------
  async function showJob(id) {
    st.selected = String(id);
    if (location.hash !== '#job=' + id) history.replaceState(null, '', '#job=' + id);
    const [job, ev] = await Promise.all([getJson('/api/v1/jobs/' + id), getJson('/api/v1/jobs/' + id + '/events')]);
    if (st.selected !== String(id)) return;
    $('job-panel').hidden = false;
    $('job-title').textContent = `${job.id} ${job.spec.name}`;
    const fields = [
      ['state', stateName(job.state) + (job.reason ? ` (${job.reason}${job.reason_detail ? ': ' + job.reason_detail : ''})` : '')],
      ['user / account', `${job.user} / ${job.spec.account || '-'}`],
      ['GPUs', `${(job.gpus || []).length || job.spec.gpus}` + (job.nodelist ? ` on ${job.nodelist}` : '')],
      ['submitted', stamp(Number(job.submit_time))],
      ['started', stamp(Number(job.start_time))],
      ['ended', stamp(Number(job.end_time))],
      ['walltime', dur(Number(job.walltime_s))],
      ['predicted busbw', job.busbw_gbs ? job.busbw_gbs.toFixed(1) + ' GB/s' : '-'],
      ['preemptions / resizes / checkpoint', `${job.preemptions} / ${job.resizes} / ${job.checkpoint_epoch}`],
    ];
    $('job-fields').replaceChildren(...fields.flatMap(([k, v]) => {
      const dt = document.createElement('dt'), dd = document.createElement('dd');
      dt.textContent = k; dd.textContent = v;
      return [dt, dd];
    }));
    $('job-events').tBodies[0].replaceChildren(...ev.events.map((e) => row([stamp(e.time), e.kind, e.detail])));
    for (const c of document.querySelectorAll('.gpu.sel')) c.classList.remove('sel');
    for (const c of document.querySelectorAll(`.gpu[data-job="${CSS.escape(String(id))}"]`)) c.classList.add('sel');
  }

  // ---- loading and live updates ------------------------------------------------------------------
  async function refreshMapAndFrag() {
    const t0 = performance.now();
    const [map, placeable] = await Promise.all([getJson('/api/v1/map'), getJson('/api/v1/placeable')]);
    st.timings.fetchMapMs = performance.now() - t0;
    st.map = map;
    st.mapFetched = Date.now() / 1000;
    applyMap(map);
    applyPlaceable(placeable);
    st.placeable = placeable;
  }
  // A pending job's reason and predicted start change with passes, which send no event: the
  // pending list is read again after each event, and once more a second later while a job
  // still has no reason (submitted, not yet seen by a pass).
  let reasonRetry = null;
  async function refreshPending() {
    const r = await getJson('/api/v1/jobs?state=pending');
    const now = new Set();
    for (const j of r.jobs || []) { st.jobs.set(String(j.id), j); now.add(String(j.id)); }
    for (const [id, j] of st.jobs) if (stateName(j.state) === 'pending' && !now.has(id)) st.jobs.delete(id);
    if ((r.jobs || []).some((j) => !j.reason || j.reason === 'None') && !reasonRetry) {
      reasonRetry = setTimeout(() => { reasonRetry = null; scheduleRefresh(); }, 1000);
    }
  }
  async function loadJobs() {
    const r = await getJson('/api/v1/jobs');
    st.jobs = new Map((r.jobs || []).map((j) => [String(j.id), j]));
  }

  // Events come in bursts (a pass starts many jobs): one refresh 100 ms after the first, and on
  // large clusters (whose map is a few hundred KB, built on phalanxd's scheduling thread) at
  // most one a second.
  let pending = null, pendingSince = 0, lastRefresh = 0;
  function scheduleRefresh() {
    if (!pendingSince) pendingSince = performance.now();
    if (pending) return;
    const gap = st.map && st.map.gpus > 2048 ? 1000 : 0;
    const delay = Math.max(100, lastRefresh + gap - performance.now());
    pending = setTimeout(async () => {
      pending = null;
      lastRefresh = performance.now();
      const t0 = pendingSince;
      pendingSince = 0;
      try {
        await Promise.all([refreshMapAndFrag(), refreshPending()]);
        drawQueue();
        drawSummary(st.placeable);
        if (st.selected && !$('job-panel').hidden) await showJob(st.selected);
        st.timings.updatesMs.push(performance.now() - t0);
        document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
      } catch (e) { showError(e); }
    }, delay);
  }

  function connect() {
    const es = new EventSource('/api/v1/events');
    const live = $('live');
    es.onopen = () => {
      live.textContent = 'live';
      live.className = 'live on';
      if (st.wasOffline) { st.wasOffline = false; loadJobs().then(scheduleRefresh).catch(showError); }
    };
    es.onerror = () => {
      live.textContent = 'reconnecting';
      live.className = 'live off';
      st.wasOffline = true;
    };
    es.addEventListener('job', (m) => {
      const ev = JSON.parse(m.data);
      const j = ev.job;
      if (['completed', 'failed', 'cancelled', 'killed'].includes(stateName(j.state))) st.jobs.delete(String(j.id));
      else st.jobs.set(String(j.id), j);
      scheduleRefresh();
    });
    es.addEventListener('nodes', () => scheduleRefresh());  // drained, resumed, lost: the map again
    es.addEventListener('sample', (m) => {
      const s = JSON.parse(m.data);
      const last = st.samples[st.samples.length - 1];
      if (!last || s.time > last.time) {
        st.samples.push(s);
        if (st.samples.length > 20000) st.samples.shift();
        drawCharts();
      }
      refreshHistory();
    });
  }

  async function start() {
    const t0 = performance.now();
    try {
      const [, , topo] = await Promise.all([loadJobs(), refreshMapAndFrag(), getJson('/api/v1/topology')]);
      $('cluster-name').textContent = `${topo.nodes} nodes, ${topo.gpus} GPUs`;
      drawQueue();
      drawSummary(st.placeable);
      const h0 = performance.now();
      await loadHistory();
      st.timings.historyMs = performance.now() - h0;
      const c0 = performance.now();
      drawCharts();
      drawHistoryCharts();
      st.timings.chartsMs = performance.now() - c0;
      setupMapEvents();
      $('job-close').addEventListener('click', () => {
        $('job-panel').hidden = true;
        st.selected = null;
        history.replaceState(null, '', location.pathname);
        for (const c of document.querySelectorAll('.gpu.sel')) c.classList.remove('sel');
      });
      connect();
      const m = /^#job=(\d+)$/.exec(location.hash);
      if (m) showJob(m[1]).catch(showError);
      requestAnimationFrame(() => requestAnimationFrame(() => {
        st.timings.firstPaintMs = performance.now() - t0;
        st.timings.navigationToPaintMs = performance.now();
        document.body.dataset.ready = '1';
      }));
      // The jobs list with the finished ones: after the first paint (large on a busy cluster).
      loadWaits().catch(showError);
    } catch (e) {
      showError(e);
    }
    setInterval(() => { if (st.jobs.size) drawQueue(); }, 5000);  // run times and time left tick
  }
  start();
})();
