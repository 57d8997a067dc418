"""The kill table `make mutants` writes and renders (the runs themselves are
`make mutants`: a kernel build per mutant)."""
import json

from rig.tools import mutants


def test_kill_table_names_what_each_mutant_breaks_and_what_caught_it(tmp_path):
    test = "scenarios.test_s07_nmi_mid_line::test_s7[patched]"
    rows = [mutants.kill_row("ier-not-restored", "caught",
                             {test: "AssertionError: IER x|y\nmore"}),
            mutants.kill_row("emergency-cpu-zero", "NOT CAUGHT", {})]
    mutants.write_kill_table(tmp_path / "kills.json", rows)
    table = json.loads((tmp_path / "kills.json").read_text())
    first = table["mutants"][0]
    assert first["breaks"].startswith("The 8250 console write leaves IER cleared")
    assert first["caught_by"] == {test: "AssertionError: IER x|y"}
    mutants.render_kill_table(tmp_path / "kills.json", tmp_path / "mutants.md")
    page = (tmp_path / "mutants.md").read_text()
    assert "| `ier-not-restored` |" in page
    assert "`test_s7[patched]`: AssertionError: IER x\\|y" in page
    assert "| `emergency-cpu-zero` |" in page and "NOT CAUGHT | - |" in page


def test_a_resumed_run_keeps_the_rows_of_unchanged_mutants(tmp_path):
    kills = tmp_path / "kills.json"
    key_of = {n: mutants.mutant_kernel_step(n).key
              for n in ("ier-not-restored", "emergency-cpu-zero")}
    row = mutants.kill_row("ier-not-restored", "caught", {"t": "AssertionError: IER"},
                           key=key_of["ier-not-restored"], tests="scenarios")
    stale = mutants.kill_row("emergency-cpu-zero", "caught", {"t": "x"}, key="0" * 16,
                             tests="scenarios")
    mutants.write_kill_table(kills, [row, stale])
    earlier = mutants.earlier_rows(kills)
    assert earlier["ier-not-restored"]["key"] == key_of["ier-not-restored"]
    # The stale row's kernel key no longer matches: a resumed run runs it again.
    assert earlier["emergency-cpu-zero"]["key"] != key_of["emergency-cpu-zero"]
    # A new row replaces the earlier one; the others keep the series' order.
    fresh = mutants.kill_row("emergency-cpu-zero", "NOT CAUGHT", {})
    series = ["ier-not-restored", "emergency-cpu-zero"]
    table = mutants.merged(series, [fresh], earlier)
    assert [r["mutant"] for r in table] == ["ier-not-restored", "emergency-cpu-zero"]
    assert table[1]["verdict"] == "NOT CAUGHT"
    assert mutants.earlier_rows(tmp_path / "missing.json") == {}
