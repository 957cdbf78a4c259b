"""Charts as SVG markup, drawn on the server: no script, no library, nothing to fetch.

Pure functions from numbers to a string. Labels are escaped; colours come from the stylesheet
through each series' class (``series-0``, ``series-1``…), since the page's CSP allows no inline
style.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

WIDTH, HEIGHT = 640, 200
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 12, 10, 26
GRAPH_PEERS = 48  # the trust picture names at most this many peers (the table lists them all)


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]  # (x, y), x increasing


def _ticks(low: float, high: float) -> list[float]:
    """Three gridline values from low to high."""
    return [low + (high - low) * i / 2 for i in range(3)]


def nice_top(value: float) -> float:
    """The axis's top: ``value`` rounded up to 1, 2 or 5 times a power of ten, so that its half is
    round too (a top of 0.013 read "0 / 0.01 / 0.01" before; 0.02 reads "0 / 0.01 / 0.02")."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return float(next(m * power for m in (1, 2, 5, 10) if value <= m * power * (1 + 1e-9)))


def _label(value: float, step: float | None = None) -> str:
    """A value with as many decimals as its axis step needs (and no more)."""
    if step is None or step <= 0:
        return f"{value:.0f}" if abs(value) >= 10 or value == int(value) else f"{value:.2f}"
    decimals = next((d for d in range(7) if abs(round(step, d) - step) <= step * 1e-6), 6)
    return f"{value:.{decimals}f}"


def line_chart(series: Sequence[Series], *, title: str, x_labels: tuple[str, str], y_max: float | None = None) -> str:
    """Lines over a shared x range; ``x_labels`` name its two ends (times, for a person)."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    if not xs:
        return _empty(title)
    x0, x1 = min(xs), max(xs)
    top = y_max if y_max is not None else nice_top(max(ys))
    plot_w, plot_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM

    def at(x: float, y: float) -> str:
        px = PAD_LEFT + (plot_w * (x - x0) / (x1 - x0) if x1 > x0 else plot_w)
        py = PAD_TOP + plot_h * (1 - min(max(y, 0.0), top) / top)
        return f"{px:.1f},{py:.1f}"

    parts = [_open(title), *_grid(top)]
    for index, line in enumerate(series):
        points = " ".join(at(x, y) for x, y in line.points)
        parts.append(f'<polyline class="series series-{index}" fill="none" points="{points}">')
        parts.append(f"<title>{escape(line.name)}</title></polyline>")
    parts += [*_ends(*x_labels), "</svg>"]
    return "".join(parts)


def bar_chart(bars: Sequence[tuple[str, float]], *, title: str) -> str:
    """One bar per (label, value), in order; the first and last labels under the axis."""
    if not bars:
        return _empty(title)
    top = nice_top(max(v for _, v in bars))
    plot_w, plot_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM
    step = plot_w / len(bars)
    parts = [_open(title), *_grid(top)]
    for i, (label, value) in enumerate(bars):
        h = plot_h * value / top
        x = PAD_LEFT + i * step + step * 0.15
        y = PAD_TOP + plot_h - h
        parts.append(
            f'<rect class="bar series-0" x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{h:.1f}">'
            f"<title>{escape(label)}: {_label(value)}</title></rect>"
        )
    bottom = HEIGHT - 8
    parts.append(f'<text class="axis" x="{PAD_LEFT}" y="{bottom}">{escape(bars[0][0])}</text>')
    parts.append(
        f'<text class="axis" x="{WIDTH - PAD_RIGHT}" y="{bottom}" text-anchor="end">{escape(bars[-1][0])}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def trust_graph(me: str, peers: Sequence[Mapping[str, Any]], *, title: str) -> str:
    """This node in the middle, each peer on a circle around it; a line's width is how much this
    node trusts the peer (combined trust), a peer's class its level (and whether it is banned)."""
    size, centre, radius = 360, 180, 140
    parts = [
        f'<svg class="chart graph" viewBox="0 0 {size} {size}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    shown = list(peers)[:GRAPH_PEERS]
    for i, peer in enumerate(shown):
        angle = 2 * math.pi * i / max(len(shown), 1) - math.pi / 2
        x, y = centre + radius * math.cos(angle), centre + radius * math.sin(angle)
        width = 0.5 + 5 * max(0.0, min(1.0, float(peer.get("combined") or 0)))
        level = "banned" if peer.get("banned_until_ms") else str(peer.get("level", "unknown"))
        name = str(peer.get("peer_id", ""))
        parts.append(
            f'<line class="edge" x1="{centre}" y1="{centre}" x2="{x:.1f}" y2="{y:.1f}" stroke-width="{width:.2f}"/>'
        )
        parts.append(
            f'<circle class="peer level-{escape(level)}" cx="{x:.1f}" cy="{y:.1f}" r="9">'
            f"<title>{escape(name)}: {escape(level)}, trust {float(peer.get('combined') or 0):.2f}</title></circle>"
        )
        parts.append(f'<text class="axis" x="{x:.1f}" y="{y + 22:.1f}" text-anchor="middle">{escape(name[-6:])}</text>')
    parts.append(
        f'<circle class="self" cx="{centre}" cy="{centre}" r="12"><title>{escape(me)} (this node)</title></circle>'
    )
    if not shown:
        parts.append(f'<text class="axis" x="{centre}" y="{centre + 32}" text-anchor="middle">no peers yet</text>')
    parts.append("</svg>")
    return "".join(parts)


def _grid(top: float) -> list[str]:
    """Three horizontal gridlines with their values, from 0 to ``top``."""
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    out = []
    for value in _ticks(0, top):
        y = PAD_TOP + plot_h * (1 - value / top)
        out.append(f'<line class="grid" x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        label = _label(value, top / 2)
        out.append(f'<text class="axis" x="{PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    return out


def _ends(left: str, right: str) -> list[str]:
    """The labels under the two ends of the x axis."""
    y = HEIGHT - 8
    return [
        f'<text class="axis" x="{PAD_LEFT}" y="{y}">{escape(left)}</text>',
        f'<text class="axis" x="{WIDTH - PAD_RIGHT}" y="{y}" text-anchor="end">{escape(right)}</text>',
    ]


def _open(title: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    )


def _empty(title: str) -> str:
    return (
        _open(title)
        + f'<text class="axis" x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data yet</text></svg>'
    )
