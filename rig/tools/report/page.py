"""The HTML of a run's report and of a suite's index: one file each, no
external resources (the data is embedded as JSON, the timeline drawn by the
page's own script into SVG). The pages are Jinja2 templates in templates/,
autoescaped; the style and the script are files there too."""
from pathlib import Path
from typing import List, Optional

import jinja2
from markupsafe import Markup

TEMPLATES = Path(__file__).parent / "templates"
ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                         autoescape=jinja2.select_autoescape(["html"]),
                         undefined=jinja2.StrictUndefined)


def asset(name: str) -> Markup:
    """The style or the script, as written: not text to escape."""
    return Markup((TEMPLATES / name).read_text())


def status(prop: dict) -> str:
    return "PASS" if prop["ok"] else "XFAIL" if prop["expected"] else "FAIL"


def status_class(verdict: str, expected_end: bool = False) -> str:
    """ok for PASS, xfail for XFAIL and for an end the test asked for (its
    class shown as the verdict), bad for everything else."""
    if expected_end:
        return "xfail"
    return {"PASS": "ok", "XFAIL": "xfail"}.get(verdict, "bad")


def render(template: str, **values) -> str:
    return ENV.get_template(template).render(
        style=asset("report.css"), status=status, status_class=status_class, **values)


def run_page(d: dict) -> str:
    page_data = {k: v for k, v in d.items() if k != "more_pages"}
    return render("run.html", d=d, page_data=page_data, script=asset("report.js"))


def lines_page(d: dict, lines: List[dict], number: int, before: str,
               after: Optional[str]) -> str:
    """A further page of a long run's transcript."""
    data = {"lines": lines, "levels": d["levels"], "timeline": None, "cpus": d["cpus"]}
    return render("lines.html", d=d, data=data, number=number, before=before, after=after,
                  script=asset("report.js"))


def index_page(title: str, rows: List[dict]) -> str:
    """rows: name, flavor, profile, test, verdict, expected_end, outcome, href (None:
    a run directory the report could not read; outcome says why)."""
    failed = sum(status_class(r["verdict"], r["expected_end"]) == "bad" for r in rows)
    return render("index.html", title=title, rows=rows, failed=failed)
