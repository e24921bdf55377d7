"""The report's jinja2 environment: templates under ``templates/`` (shipped as package data), autoescape
on for every template, undefined names an error (a typo fails the build instead of printing nothing)."""

from __future__ import annotations

import functools


@functools.cache
def environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("wkvbench.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(name: str, **context: object) -> str:
    return environment().get_template(name).render(**context)
