// PhxChart: the line and bar charts of phalanxd's dashboard and of the simulator's HTML report
// (one file, embedded in both). Plain SVG, no dependencies. Readable at a glance: ticks on
// round values (1-2-5 steps; time in s, min, h, d), a rolling mean with a min-max band for
// noisy series, and a unit on every axis.
(function (global) {
  'use strict';
  const NS = 'http://www.w3.org/2000/svg';

  // About `count` ticks on 1, 2 or 5 times a power of ten covering [lo, hi].
  function niceTicks(lo, hi, count) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / Math.max(1, count || 5);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = mag * 10;
    for (const m of [1, 2, 5, 10]) {
      if (m * mag >= raw) { step = m * mag; break; }
    }
    const ticks = [];
    for (let i = Math.ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9; i++) ticks.push(+(i * step).toPrecision(12));
    return { ticks, step };
  }

  // Durations in seconds: steps that read as round times.
  const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
                      86400, 172800, 432000, 604800, 1209600, 2592000];
  function timeUnit(step) {
    if (step >= 86400) return { div: 86400, name: 'd' };
    if (step >= 3600) return { div: 3600, name: 'h' };
    if (step >= 60) return { div: 60, name: 'min' };
    return { div: 1, name: 's' };
  }
  function timeTicks(lo, hi, count) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / Math.max(1, count || 5);
    let step = TIME_STEPS[TIME_STEPS.length - 1];
    for (const s of TIME_STEPS) {
      if (s >= raw) { step = s; break; }
    }
    if (raw > step) step = niceTicks(0, raw * 5, 5).step;
    const ticks = [];
    for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9; v += step) ticks.push(v);
    return { ticks, step, unit: timeUnit(step) };
  }

  function trimNumber(v) {
    const s = Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(1) : String(+v.toPrecision(6));
    return s;
  }
  // "45 s", "15 min", "6 h", "2.5 d".
  function formatDuration(seconds) {
    const a = Math.abs(seconds);
    const u = a >= 86400 ? timeUnit(86400) : a >= 3600 ? timeUnit(3600) : a >= 60 ? timeUnit(60) : timeUnit(1);
    return trimNumber(+(seconds / u.div).toFixed(1)) + ' ' + u.name;
  }
  function clock(t) {
    const d = new Date(t * 1000);
    const p = (n) => String(n).padStart(2, '0');
    return p(d.getHours()) + ':' + p(d.getMinutes()) + (d.getSeconds() ? ':' + p(d.getSeconds()) : '');
  }

  // Rolling mean and min/max over the last `window` points (x ascending).
  function rolling(points, window) {
    const out = [];
    for (let i = 0; i < points.length; i++) {
      const from = Math.max(0, i - window + 1);
      let sum = 0, min = Infinity, max = -Infinity;
      for (let j = from; j <= i; j++) {
        const y = points[j][1];
        sum += y; min = Math.min(min, y); max = Math.max(max, y);
      }
      out.push({ x: points[i][0], mean: sum / (i - from + 1), min, max });
    }
    return out;
  }

  function el(name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2'];

  // A line chart into `container` (its content is replaced).
  // spec: { title, series: [{ name, points: [[x, y], ...], color, window }], x: { label, kind:
  //   'clock' (epoch seconds) | 'duration' (seconds) | 'number', unit }, y: { label, unit, min, max },
  //   width, height }. A series with `window` > 1 is drawn as its rolling mean over a min-max band.
  // Each legend entry carries data-series (the name) and data-points (its points), each bar
  // data-series, data-label and data-value: for tests and scripts.
  function line(container, spec) {
    const W = spec.width || 560, H = spec.height || 220, L = 56, R = 12, T = spec.title ? 22 : 8, B = 38;
    const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': spec.title || spec.y.label });
    let xlo = Infinity, xhi = -Infinity, ylo = spec.y.min !== undefined ? spec.y.min : Infinity, yhi = -Infinity;
    for (const s of spec.series) for (const [x, y] of s.points) {
      xlo = Math.min(xlo, x); xhi = Math.max(xhi, x);
      if (spec.y.min === undefined) ylo = Math.min(ylo, y);
      yhi = Math.max(yhi, y);
    }
    if (spec.y.max !== undefined) yhi = spec.y.cap ? Math.min(yhi, spec.y.max) : Math.max(yhi, spec.y.max);
    if (!isFinite(xlo)) { xlo = 0; xhi = 1; }
    if (!isFinite(ylo)) ylo = 0;
    if (!(yhi > ylo)) yhi = ylo + 1;
    if (!(xhi > xlo)) xhi = xlo + 1;
    const logx = spec.x.kind === 'logduration';
    const lx = (x) => Math.log10(Math.max(x, 1));
    if (logx) { xlo = lx(xlo); xhi = Math.max(lx(xhi), xlo + 1); }
    const xt = spec.x.kind === 'number' || logx ? niceTicks(xlo, xhi, 6)
      : timeTicks(spec.x.kind === 'clock' ? 0 : xlo, xhi - (spec.x.kind === 'clock' ? xlo : 0), 6);
    const yt = niceTicks(ylo, yhi, 5);
    yhi = Math.max(yhi, yt.ticks[yt.ticks.length - 1]);
    ylo = Math.min(ylo, yt.ticks[0]);
    const sx0 = (x) => L + (x - xlo) / (xhi - xlo) * (W - L - R);
    const sx = logx ? (x) => sx0(lx(x)) : sx0;
    const sy = (y) => H - B - (Math.min(y, yhi) - ylo) / (yhi - ylo) * (H - T - B);
    if (spec.title) svg.appendChild(el('text', { x: L, y: 14, 'font-size': 12, 'font-weight': 'bold' }, spec.title));
    const axis = el('g', { 'font-size': 10, fill: '#555' });
    for (const v of yt.ticks) {
      if (v < ylo - 1e-9 || v > yhi + 1e-9) continue;
      axis.appendChild(el('line', { x1: L, x2: W - R, y1: sy(v), y2: sy(v), stroke: '#e3e3e3' }));
      axis.appendChild(el('text', { x: L - 4, y: sy(v) + 3, 'text-anchor': 'end' }, trimNumber(v)));
    }
    let xname;
    if (spec.x.kind === 'clock') {
      for (const off of xt.ticks) {
        const v = xlo + off;
        if (v > xhi + 1e-9) continue;
        axis.appendChild(el('text', { x: sx(v), y: H - B + 13, 'text-anchor': 'middle' }, clock(v)));
      }
      xname = (spec.x.label || 'time') + ' (local clock; ticks every ' + formatDuration(xt.step) + ')';
    } else if (logx) {
      // Round times on a log scale: 1 s, 10 s, 1 min, 10 min, 1 h, 10 h, 1 d, 10 d, 100 d.
      for (const v of [1, 10, 60, 600, 3600, 36000, 86400, 864000, 8640000]) {
        if (lx(v) < xlo - 1e-9 || lx(v) > xhi + 1e-9) continue;
        axis.appendChild(el('line', { x1: sx(v), x2: sx(v), y1: T, y2: H - B, stroke: '#eee' }));
        axis.appendChild(el('text', { x: sx(v), y: H - B + 13, 'text-anchor': 'middle' }, formatDuration(v)));
      }
      xname = (spec.x.label || 'time') + ' (log scale)';
    } else if (spec.x.kind === 'duration') {
      for (const v of xt.ticks) axis.appendChild(el('text', { x: sx(v), y: H - B + 13, 'text-anchor': 'middle' }, trimNumber(v / xt.unit.div)));
      xname = (spec.x.label || 'time') + ' (' + xt.unit.name + ')';
    } else {
      for (const v of xt.ticks) axis.appendChild(el('text', { x: sx(v), y: H - B + 13, 'text-anchor': 'middle' }, trimNumber(v)));
      xname = spec.x.label + (spec.x.unit ? ' (' + spec.x.unit + ')' : '');
    }
    axis.appendChild(el('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, xname));
    axis.appendChild(el('text', { x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${(T + H - B) / 2})` },
                        spec.y.label + (spec.y.unit ? ' (' + spec.y.unit + ')' : '')));
    axis.appendChild(el('line', { x1: L, x2: L, y1: T, y2: H - B, stroke: '#999' }));
    axis.appendChild(el('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#999' }));
    svg.appendChild(axis);
    let legendX = L + 4;
    spec.series.forEach((s, i) => {
      const color = s.color || PALETTE[i % PALETTE.length];
      const dash = s.dashed ? { 'stroke-dasharray': '5,3' } : {};
      const pts = s.points.slice().sort((a, b) => a[0] - b[0]);
      if (s.window > 1 && pts.length > 2) {
        const r = rolling(pts, s.window);
        const band = r.map((p) => `${sx(p.x)},${sy(p.max)}`).concat(r.slice().reverse().map((p) => `${sx(p.x)},${sy(p.min)}`));
        svg.appendChild(el('polygon', { points: band.join(' '), fill: color, 'fill-opacity': 0.15, stroke: 'none' }));
        svg.appendChild(el('polyline', { points: r.map((p) => `${sx(p.x)},${sy(p.mean)}`).join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5 }));
      } else if (pts.length > 0) {
        svg.appendChild(el('polyline', { points: pts.map((p) => `${sx(p[0])},${sy(p[1])}`).join(' '), fill: 'none', stroke: color, 'stroke-width': 1.5, ...dash }));
      }
      const label = s.name + (s.window > 1 ? ` (mean of ${s.window}, band min-max)` : '');
      svg.appendChild(el('rect', { x: legendX, y: T + 2, width: 8, height: 8, fill: color }));
      svg.appendChild(el('text', { x: legendX + 11, y: T + 10, 'font-size': 10, 'data-series': s.name, 'data-points': pts.length }, label));
      legendX += 18 + label.length * 5.6;
    });
    container.replaceChildren(svg);
    return svg;
  }

  // Grouped vertical bars. spec: { title, labels: [...], series: [{ name, values: [...], color }],
  //   y: { label, unit, kind: 'duration' (seconds, ticks in round s/min/h/d) | 'number' }, x: { label } }.
  function bars(container, spec) {
    const W = spec.width || 560, H = spec.height || 220, L = 56, R = 12, T = spec.title ? 22 : 8, B = 38;
    const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': spec.title || spec.y.label });
    const vmax = Math.max(0, ...spec.series.flatMap((s) => s.values));
    let yt, div = 1, unit = spec.y.unit || '';
    if (spec.y.kind === 'duration') {
      yt = timeTicks(0, vmax || 1, 5);
      div = yt.unit.div;
      unit = yt.unit.name;
    } else {
      yt = niceTicks(0, vmax || 1, 5);
    }
    const ymax = Math.max(vmax, yt.ticks[yt.ticks.length - 1]) || 1;
    const sy = (y) => H - B - y / ymax * (H - T - B);
    if (spec.title) svg.appendChild(el('text', { x: L, y: 14, 'font-size': 12, 'font-weight': 'bold' }, spec.title));
    const g = el('g', { 'font-size': 10, fill: '#555' });
    for (const v of yt.ticks) {
      g.appendChild(el('line', { x1: L, x2: W - R, y1: sy(v), y2: sy(v), stroke: '#e3e3e3' }));
      g.appendChild(el('text', { x: L - 4, y: sy(v) + 3, 'text-anchor': 'end' }, trimNumber(v / div)));
    }
    const n = spec.labels.length, gw = (W - L - R) / Math.max(1, n), bw = gw * 0.8 / Math.max(1, spec.series.length);
    spec.labels.forEach((label, i) => {
      spec.series.forEach((s, k) => {
        const v = s.values[i] || 0;
        const r = el('rect', { x: L + i * gw + gw * 0.1 + k * bw, y: sy(v), width: bw, height: H - B - sy(v), fill: s.color || PALETTE[k % PALETTE.length],
          'data-series': s.name, 'data-label': label, 'data-value': v });
        r.appendChild(el('title', {}, `${s.name} ${label}: ${spec.y.kind === 'duration' ? formatDuration(v) : trimNumber(v)}`));
        g.appendChild(r);
      });
      g.appendChild(el('text', { x: L + i * gw + gw / 2, y: H - B + 13, 'text-anchor': 'middle' }, label));
    });
    let lx = L + 4;
    spec.series.forEach((s, k) => {
      g.appendChild(el('rect', { x: lx, y: T + 2, width: 8, height: 8, fill: s.color || PALETTE[k % PALETTE.length] }));
      g.appendChild(el('text', { x: lx + 11, y: T + 10 }, s.name));
      lx += 18 + s.name.length * 5.6;
    });
    g.appendChild(el('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle' }, spec.x.label));
    g.appendChild(el('text', { x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${(T + H - B) / 2})` },
                     spec.y.label + (unit ? ' (' + unit + ')' : '')));
    svg.appendChild(g);
    container.replaceChildren(svg);
    return svg;
  }

  global.PhxChart = { niceTicks, timeTicks, formatDuration, rolling, line, bars, palette: PALETTE };
})(typeof window !== 'undefined' ? window : globalThis);
