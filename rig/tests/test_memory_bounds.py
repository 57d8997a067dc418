"""Memory bounded by design, not by input: rig parse, rig diff, rig report
and the judging of a run, each as its own process on logs of two sizes
(rig.tools.bench.biglog). Their peak memory stays within the budget, and a
log four times longer costs next to nothing more (the readers stream: a
register log of a gigabyte once took 150 bytes a record). make bench runs
the same readers on 1 GB logs. Each reader's verdict is checked too: the
diff names the four edits, the report pages its transcript."""
import json

import pytest

from rig.tools.bench import biglog

pytestmark = pytest.mark.boots
SMALL, LARGE = 6 << 20, 24 << 20
# What a reader may grow by from the small logs to the large ones: far
# below the 18 MB the logs grow by (a design that holds the log grows by
# several times it).
GROWTH_MB = 12


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    base = biglog.base_run(tmp_path_factory.mktemp("base") / "run", "memory-bounds")
    return {size: biglog.cases(tmp_path_factory.mktemp(f"logs-{size >> 20}"), size, base)
            for size in (SMALL, LARGE)}


@pytest.mark.parametrize("reader,rc", [("parse", 0), ("diff", 1), ("report", 0),
                                       ("judge a run", 0)])
def test_a_reader_keeps_to_its_budget_whatever_the_size(measured, reader, rc):
    small, large = measured[SMALL][reader], measured[LARGE][reader]
    assert large["rc"] == rc and small["rc"] == rc, large["stderr"] or small["stderr"]
    assert "Traceback" not in large["stderr"]
    assert large["peak_rss_mb"] <= biglog.BUDGET_MB, large
    assert large["peak_rss_mb"] - small["peak_rss_mb"] <= GROWTH_MB, (small, large)


def test_the_diff_of_long_logs_names_each_edit(tmp_path):
    """Beyond one window (rig.evidence.diffstream), the edits of
    biglog.write_edited are each found, with their lines."""
    import io
    from collections import Counter
    from rig.evidence import diffstream, logdiff
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    biglog.write_console(a, 6 << 20)
    biglog.write_edited(a, b)
    out = io.StringIO()
    assert diffstream.main(str(a), str(b), True, None, True, False, out) == 1
    res = json.loads(out.getvalue())
    assert res["a"]["records"] > diffstream.WINDOW
    # What a comparison of the whole logs in memory finds, the windows find.
    la, lb = (logdiff.parse(str(p), p.read_bytes()) for p in (a, b))
    whole = Counter(d.kind for d in logdiff.compare(la, lb) if d.kind != "note")
    assert res["counts"] == dict(whole), (res["counts"], whole)
    assert whole["missing"] == whole["extra"] == whole["changed"] == whole["moved"] == 1
    kinds = {d["kind"]: d for d in res["differences"]}
    assert kinds["missing"]["a_line"] == 1001 and kinds["extra"]["b_line"] == 2000
    assert kinds["changed"]["detail"].endswith(" changed'")
    assert kinds["moved"]["a_line"] == 4001
