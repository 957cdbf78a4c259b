"""The dashboard's SVG charts and the history they draw (pure functions)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from node.dashboard.charts import Series, bar_chart, line_chart, trust_graph
from node.dashboard.history import History, sample_of

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # our own markup: a parse failure is the test failing


def test_a_line_chart_scales_points_into_its_box_and_escapes_names() -> None:
    svg = _parse(
        line_chart([Series("<cortisol>", [(0, 0.0), (60, 0.5), (120, 1.0)])], title="t", x_labels=("a", "b"), y_max=1.0)
    )
    line = svg.find(f"{SVG}polyline")
    assert line is not None and line.get("class") == "series series-0"
    points = [tuple(map(float, p.split(","))) for p in (line.get("points") or "").split()]
    assert [round(x) for x, _ in points] == [44, 336, 628]  # left pad to right pad
    assert points[0][1] > points[1][1] > points[2][1]  # higher values higher up
    assert line.findtext(f"{SVG}title") == "<cortisol>"  # a name is text, never markup


def test_empty_charts_say_so() -> None:
    assert "no data yet" in line_chart([], title="t", x_labels=("", ""))
    assert "no data yet" in bar_chart([], title="t")
    assert "no peers yet" in trust_graph("me", [], title="t")


def test_a_bar_per_day_and_a_circle_per_peer() -> None:
    bars = _parse(bar_chart([("2026-11-22", 0.0), ("2026-11-23", 1.5), ("2026-11-24", 3.0)], title="earned"))
    heights = [float(r.get("height") or 0) for r in bars.iter(f"{SVG}rect")]
    assert heights[0] == 0 and heights[2] == 2 * heights[1] > 0
    peers = [{"peer_id": "12D3KooWaaaaaa", "level": "trusted", "combined": 1.0},
             {"peer_id": "12D3KooWbbbbbb", "level": "provisional", "combined": 0.1, "banned_until_ms": 5}]  # fmt: skip
    graph = _parse(trust_graph("me", peers, title="trust"))
    classes = [c.get("class") for c in graph.iter(f"{SVG}circle")]
    assert classes == ["peer level-trusted", "peer level-banned", "self"]
    widths = [float(e.get("stroke-width") or 0) for e in graph.iter(f"{SVG}line")]
    assert widths[0] > widths[1]


def test_history_turns_counters_into_rates_and_keeps_a_day() -> None:
    history = History(capacity=3)
    for minute, accepted, refused in ((0, 10, 1), (1, 15, 1), (2, 15, 4), (3, 30, 4)):
        status = {"details": {"memory": {"hormones": {"cortisol": minute / 10}},
                              "p2p": {"messages": {"skills": {"accepted": accepted, "replayed": refused}},
                                      "peers": {"connected": 2}}}}  # fmt: skip
        history.add(sample_of(status, minute * 60_000))
    assert len(history) == 3 and history.span_ms() == (60_000, 180_000)  # the oldest sample fell out
    by_name = {s.name: [y for _, y in s.points] for s in history.verdicts()}
    assert by_name == {"skills accepted": [0, 15], "skills refused": [3, 0]}
    assert [y for _, y in history.hormones()[0].points] == [0.1, 0.2, 0.3]
    assert sample_of({"details": {}}, 0).peers_connected == 0  # P2P off


def test_an_axis_reads_three_distinct_round_values_whatever_the_scale() -> None:
    """Issue 32: a chart of small values read "0.01 / 0.01 / 0" on its axis."""
    for top in (0.013, 0.0065, 0.5, 3.0, 7.2, 150.0, 0.00042):
        svg = line_chart([Series("s", [(0, 0.0), (1, top)])], title="t", x_labels=("a", "b"))
        labels = re.findall(r'<text class="axis" x="38" y="[0-9.]+" text-anchor="end">([^<]+)</text>', svg)
        values = [float(v) for v in labels]
        assert len(set(labels)) == 3 and values[0] == 0 and values[2] >= top, (top, labels)
        assert abs(values[1] * 2 - values[2]) < 1e-12  # the middle line is half the top, as written
