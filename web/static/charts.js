// Live charts of the admin's page, drawn with uPlot (vendored in vendor/uplot, served
// with the pages). A Series keeps the last points of a few figures read by polling,
// and a chart draws them; nothing is stored on the server.
import uPlot from './vendor/uplot/uPlot.esm.js';

const keep = 300; // points kept per chart: 10 minutes at one read every 2 s

// liveChart draws lines over time in parent. lines: [{label, color, scale?}]; a line
// with scale 'rate' is read on the right axis.
export function liveChart(parent, lines) {
  const data = [[], ...lines.map(() => [])];
  const hasRate = lines.some((l) => l.scale === 'rate');
  const opts = {
    width: Math.max(240, parent.clientWidth || 400),
    height: 170,
    legend: { live: false },
    cursor: { show: false },
    scales: { x: { time: true } },
    series: [{}, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, scale: l.scale || 'y', points: { show: false } }))],
    axes: [{}, { scale: 'y', size: 50 }, ...(hasRate ? [{ scale: 'rate', side: 1, size: 50, grid: { show: false } }] : [])],
  };
  const plot = new uPlot(opts, data, parent);
  new ResizeObserver(() => plot.setSize({ width: Math.max(240, parent.clientWidth), height: 170 })).observe(parent);
  return {
    // add appends one reading: values in the order of lines (null for a gap).
    add(atMs, values) {
      data[0].push(atMs / 1000);
      values.forEach((v, i) => data[i + 1].push(v));
      if (data[0].length > keep) data.forEach((d) => d.shift());
      plot.setData(data);
      parent.dataset.points = String(data[0].length);
      parent.dataset.last = values.map((v) => (v === null ? '' : String(v))).join(' ');
    },
  };
}

// perSecond turns successive totals into a rate: the change since the last reading
// divided by the seconds between them (null at the first).
export function perSecond() {
  let last = null;
  return (atMs, total) => {
    const prev = last;
    last = { atMs, total };
    if (!prev || atMs <= prev.atMs) return null;
    return Math.max(0, Math.round(((total - prev.total) / ((atMs - prev.atMs) / 1000)) * 10) / 10);
  };
}
