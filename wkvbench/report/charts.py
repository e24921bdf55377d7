"""The report's charts, drawn by plotly.js in the reader's browser (hover, zoom, pan, legend toggles).

Line and bar charts (418 and 95 of the report's figures) are written as plotly's JSON form directly: through
``graph_objects`` they took 13 of the 32 s of a profiled report build on the 2-core machine (2026-11-29),
nearly all of it plotly's validation, and the report is the last phase of every ``wkvbench gpu`` run.
Unprofiled, the build went from 16.2 to 10.9 s. A test builds the same charts through ``graph_objects`` and
checks the two agree (``suites/unit/test_report_charts.py``). Every figure is written into the page as one
JSON document; plotly.js itself is inlined once, from the plotly package (``plotly.offline.get_plotlyjs``), so
the page needs no network. Every point carries a facet key, an index into ``(machine, operator, dtype)``
triples, which the page's filter controls use to narrow every chart and table client-side
(``templates/filters.js.j2``).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field

MACHINE_NOT_RECORDED = "machine not recorded"  # as matrix.hardware names it


@dataclass
class Trace:
    name: str
    x: list = field(default_factory=list)
    y: list = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # hover text of each point
    keys: list[int] = field(default_factory=list)  # facet key of each point
    dashed: bool = False

    def add(self, x: object, y: float, text: str, key: int) -> None:
        self.x.append(x)
        self.y.append(y)
        self.text.append(text)
        self.keys.append(key)


@dataclass
class Chart:
    id: str
    title: str
    figure: dict  # plotly's JSON form: {"data": [...], "layout": {...}}
    keys: list[list[int]]  # per trace, per point


class Charts:
    """Every chart of one page and the facet triples their points refer to."""

    def __init__(self) -> None:
        self.facets: dict[tuple[str, str, str], int] = {}
        self.charts: list[Chart] = []
        self.offered: tuple[set[str], set[str], set[str]] = (set(), set(), set())

    def key(self, machine: str | None, op: str | None, dtype: str | None) -> int:
        """The facet key of a point; an unknown operator or dtype is "" (hidden when that filter is set)."""
        k = (machine or MACHINE_NOT_RECORDED, op or "", dtype or "")
        self.offer(*k)
        return self.facets.setdefault(k, len(self.facets))

    def offer(self, machine: str | None = None, op: str | None = None, dtype: str | None = None) -> None:
        """Values the filter controls offer (tables have some that no chart has)."""
        for vals, v in zip(self.offered, (machine, op, dtype), strict=True):
            if v:
                vals.add(v)

    def options(self, op_key=None, dtype_key=None) -> dict[str, list[str]]:
        """The values each filter control offers: machine, op, dtype (sorted by the keys given)."""
        m, o, d = self.offered
        return {"machine": sorted(m), "op": sorted(o, key=op_key), "dtype": sorted(d, key=dtype_key)}

    def _add(self, title: str, fig, traces: list[Trace]) -> Chart:
        fig.update_layout(**_frame(title, len(traces)))
        fig.update_xaxes(**AXIS)
        fig.update_yaxes(**AXIS)
        figure = fig.to_plotly_json()
        figure["layout"].pop("template", None)  # plotly.js's own defaults; no 10 kB theme per chart
        return self._keep(title, figure, [t.keys for t in traces])

    def _keep(self, title: str, figure: dict, keys: list) -> Chart:
        """``figure`` (plotly's JSON form) as the page's next chart, with its traces' facet keys."""
        chart = Chart(f"chart-{len(self.charts)}", title, figure, keys)
        self.charts.append(chart)
        return chart

    def line(self, title: str, traces: list[Trace], x_title: str, y_title: str, *, x_type: str = "linear",
             y_type: str = "log", categories: list[str] | None = None) -> Chart:
        """Lines with markers, one per trace: plotly's JSON form of ``go.Scatter`` traces, written directly
        (see the module docstring; ``line_validated`` builds the same through ``graph_objects``)."""
        data = []
        for t in traces:
            d: dict = {"hovertemplate": "%{text}<extra>%{fullData.name}</extra>"}
            if t.dashed:
                d["line"] = {"color": "#888", "dash": "dash"}
            d.update({"mode": "lines+markers", "name": html.escape(t.name),
                      "text": [html.escape(s) for s in t.text], "x": list(t.x), "y": list(t.y),
                      "type": "scatter"})
            data.append(d)
        xaxis: dict = {"title": {"text": x_title}, "type": "category" if categories else x_type}
        if categories:
            xaxis.update(categoryorder="array", categoryarray=list(categories))
        layout = {"xaxis": {**xaxis, **AXIS}, "yaxis": {"title": {"text": y_title}, "type": y_type, **AXIS},
                  **_frame(title, len(traces))}
        return self._keep(title, {"data": data, "layout": layout}, [t.keys for t in traces])

    def line_validated(self, title: str, traces: list[Trace], x_title: str, y_title: str, *,
                       x_type: str = "linear", y_type: str = "log",
                       categories: list[str] | None = None) -> Chart:
        """``line`` through plotly's ``graph_objects``, every property validated (the tests compare them)."""
        import plotly.graph_objects as go

        fig = go.Figure()
        for t in traces:
            fig.add_trace(go.Scatter(
                x=t.x, y=t.y, name=html.escape(t.name), mode="lines+markers",
                text=[html.escape(s) for s in t.text],
                hovertemplate="%{text}<extra>%{fullData.name}</extra>",
                line={"dash": "dash", "color": "#888"} if t.dashed else None))
        fig.update_xaxes(title_text=x_title, type="category" if categories else x_type)
        if categories:
            fig.update_xaxes(categoryorder="array", categoryarray=categories)
        fig.update_yaxes(title_text=y_title, type=y_type)
        return self._add(title, fig, traces)

    def bars(self, title: str, trace: Trace, x_title: str, ref: float | None = None) -> Chart:
        """Horizontal bars (``trace.x``: labels, ``trace.y``: values), with a reference line at ``ref``:
        plotly's JSON form of a ``go.Bar``, written directly (``bars_validated`` builds it through
        ``graph_objects``). The category order lists the labels as the bars carry them, escaped (until
        2026-11-29 it listed them unescaped, and a label with ``<``, ``>`` or ``&`` fell out of the order)."""
        labels = [html.escape(str(s)) for s in trace.x]
        data = [{"hovertemplate": "%{y}: %{text}<extra></extra>", "marker": {"color": "#5c85d6"},
                 "name": html.escape(trace.name), "orientation": "h",
                 "text": [html.escape(s) for s in trace.text], "textposition": "none", "x": list(trace.y),
                 "y": labels, "type": "bar"}]
        shapes = ([{"line": {"color": "#c62828", "dash": "dash"}, "type": "line", "x0": ref, "x1": ref,
                    "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"}] if ref is not None else [])
        yaxis = {"automargin": True, "categoryorder": "array", "categoryarray": labels[::-1], **AXIS}
        layout = {**({"shapes": shapes} if shapes else {}), "xaxis": {"title": {"text": x_title}, **AXIS},
                  "yaxis": yaxis, **_frame(title, 1), "height": max(220, 80 + 18 * len(trace.x))}
        return self._keep(title, {"data": data, "layout": layout}, [trace.keys])

    def bars_validated(self, title: str, trace: Trace, x_title: str, ref: float | None = None) -> Chart:
        """``bars`` through plotly's ``graph_objects``, every property validated (the tests compare them)."""
        import plotly.graph_objects as go

        labels = [html.escape(str(s)) for s in trace.x]
        fig = go.Figure(go.Bar(
            y=labels, x=trace.y, orientation="h", name=html.escape(trace.name),
            text=[html.escape(s) for s in trace.text], textposition="none",
            hovertemplate="%{y}: %{text}<extra></extra>", marker={"color": "#5c85d6"}))
        if ref is not None:
            fig.add_vline(x=ref, line={"dash": "dash", "color": "#c62828"})
        fig.update_xaxes(title_text=x_title)
        fig.update_yaxes(automargin=True, categoryorder="array", categoryarray=labels[::-1])
        chart = self._add(title, fig, [trace])
        chart.figure["layout"]["height"] = max(220, 80 + 18 * len(trace.x))
        return chart

    def payload(self) -> str:
        """The page's chart data as JSON safe inside a ``<script>`` element (no ``<`` in it)."""
        from plotly.io.json import to_json_plotly  # NaN and infinity become null, as plotly.js expects

        doc = {"facets": [list(k) for k in self.facets],
               "charts": [{"id": c.id, "data": c.figure["data"], "layout": c.figure["layout"], "keys": c.keys}
                          for c in self.charts]}
        text = to_json_plotly(doc)
        json.loads(text)  # well-formed (a bad figure fails the build, not the reader's browser)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


AXIS = {"gridcolor": "#eee", "zeroline": False}


def _frame(title: str, traces: int) -> dict:
    """Every chart's layout but its axes."""
    return {"title": {"text": html.escape(title), "font": {"size": 13}},
            "margin": {"l": 60, "r": 10, "t": 40, "b": 50}, "height": max(320, 90 + 16 * traces),
            "hovermode": "closest", "legend": {"font": {"size": 10}}, "plot_bgcolor": "#fff"}


def log_range(values: list[float]) -> list[float] | None:
    """A log axis range from the data (a little margin each side), not a fixed 0-100."""
    v = [x for x in values if isinstance(x, (int, float)) and x > 0 and math.isfinite(x)]
    if not v:
        return None
    lo, hi = math.log10(min(v)), math.log10(max(v))
    pad = max(0.08, (hi - lo) * 0.08)
    return [lo - pad, hi + pad]


def plotly_js() -> str:
    """plotly.js, minified, from the installed plotly package (written once per site, ``plotly.min.js``)."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    return js.replace("</script", "<\\/script")
