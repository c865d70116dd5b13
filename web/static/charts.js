// Live charts of the admin's page, drawn with uPlot (vendored in vendor/uplot, served
// with the pages). A chart keeps the last points of a few figures read by polling and
// draws them; nothing is stored on the server.
import uPlot from './vendor/uplot/uPlot.esm.js';

const keep = 300; // points kept per chart: 10 minutes at one read every 2 s

// plotted keeps a chart's points and draws them with plot. The parent's data-points,
// data-last and data-max (space-separated, one per line, in the order of the lines)
// say what it drew, for tests and for anyone reading the page's markup.
function plotted(parent, lines, makePlot) {
  const data = [[], ...lines.map(() => [])];
  const max = lines.map(() => 0);
  const plot = makePlot(data);
  return {
    plot,
    // add appends one reading: values in the order of lines (null for a gap).
    add(atMs, values) {
      data[0].push(atMs / 1000);
      values.forEach((v, i) => {
        data[i + 1].push(v);
        if (v !== null && v > max[i]) max[i] = v;
      });
      if (data[0].length > keep) data.forEach((d) => d.shift());
      plot.setData(data);
      parent.dataset.points = String(data[0].length);
      parent.dataset.last = values.map((v) => (v === null ? '' : String(v))).join(' ');
      parent.dataset.max = max.join(' ');
    },
  };
}

// liveChart draws lines over time in parent, with axes. lines: [{label, color, scale?}];
// a line with scale 'rate' is read on the right axis.
export function liveChart(parent, lines) {
  const hasRate = lines.some((l) => l.scale === 'rate');
  const chart = plotted(parent, lines, (data) => new uPlot({
    width: Math.max(240, parent.clientWidth || 400),
    height: 170,
    legend: { live: false },
    cursor: { show: false },
    scales: { x: { time: true } },
    series: [{}, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, scale: l.scale || 'y', points: { show: false } }))],
    axes: [{}, { scale: 'y', size: 50 }, ...(hasRate ? [{ scale: 'rate', side: 1, size: 50, grid: { show: false } }] : [])],
  }, data, parent));
  new ResizeObserver(() => chart.plot.setSize({ width: Math.max(240, parent.clientWidth), height: 170 })).observe(parent);
  return chart;
}

// sparkline draws lines over time in parent, small and without axes or legend, from 0
// to the highest point shown. lines: [{label, color}]. Its accessible name is describe
// applied to the latest values.
export function sparkline(parent, lines, describe) {
  parent.setAttribute('role', 'img');
  const chart = plotted(parent, lines, (data) => new uPlot({
    width: 160,
    height: 36,
    padding: [3, 2, 3, 2],
    legend: { show: false },
    cursor: { show: false },
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    series: [{}, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 1.5, points: { show: false } }))],
    axes: [{ show: false }, { show: false }],
  }, data, parent));
  const add = chart.add;
  chart.add = (atMs, values) => {
    add(atMs, values);
    parent.setAttribute('aria-label', describe(values));
  };
  return chart;
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
