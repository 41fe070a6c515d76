/**
 * A time-series chart drawn by uPlot (bundled from npm by the esbuild step; canvas, no inline
 * HTML). One chart per call site: x is seconds since epoch, each series a line. Redrawn when the
 * data change and resized with its container, so a phone gets a phone-sized chart.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface Series {
  label: string;
  values: Array<number | null>;
  color: string;
  /** Draw as bars (days), not a line. */
  bars?: boolean;
  /** Mark every value with a point: a sparse series (values between gaps) stays visible. */
  points?: boolean;
}

export const PALETTE = ['#0b5cad', '#116329', '#a40e26', '#7d4e00', '#8250df', '#57606a'];

export function Chart(props: {
  title: string;
  x: number[];
  series: Series[];
  unit?: string;
  height?: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(240, el.clientWidth);
    const bars = uPlot.paths.bars?.({ size: [0.6, 40] });
    const plot = new uPlot(
      {
        width: width(),
        height: props.height ?? 220,
        series: [
          {},
          ...props.series.map((s) => ({
            label: s.label,
            stroke: s.color,
            fill: s.bars ? `${s.color}55` : undefined,
            width: 2,
            ...(s.bars && bars ? { paths: bars, points: { show: false } } : {}),
            ...(s.points ? { points: { show: true, size: 6 } } : {}),
          })),
        ],
        axes: [{}, { label: props.unit ?? '', size: 60 }],
        // Half a step of room each side, so the first and last bars are whole.
        scales: {
          x: {
            time: true,
            range: (_u, min, max) => {
              const pad = props.x.length > 1 ? (max - min) / (props.x.length - 1) / 2 : 43_200;
              return [min - pad, max + pad];
            },
          },
        },
        legend: { show: true },
      },
      [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: props.height ?? 220 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [props.x, props.series, props.unit, props.height]);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} class="chart-box" />
    </figure>
  );
}
